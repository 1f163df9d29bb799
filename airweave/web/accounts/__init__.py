"""Server-rendered account pages: organizations (switching, creating), members and invitations, API keys.

Login, sign-up, email verification and password reset are django-allauth's pages, mounted at
the same /accounts/ prefix and rendered in the same layout (templates/accounts/base.html).
"""
