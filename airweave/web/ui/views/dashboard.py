"""The dashboard `/ui/`: collections as cards, a quick start (an API key shown once, snippets),
a banner for connections that need attention, and the health line."""
from __future__ import annotations

from django.views.decorators.http import require_http_methods

from airweave.collections import selectors
from airweave.health import health_line
from airweave.tenancy import policies, services
from airweave.web.ui.access import render_page, ui_view
from airweave.web.ui.forms import QuickStartKeyForm, attach_error
from airweave.web.ui.snippets import search_snippets

DASHBOARD_CARDS = 24


@ui_view
@require_http_methods(["GET", "POST"])
def dashboard(request, caller):
    """Cards of the organization's collections; POST creates the quick-start API key (shown once)."""
    issued = None
    form = QuickStartKeyForm()
    if request.method == "POST":
        form = QuickStartKeyForm(request.POST)
        if form.is_valid():
            policies.check_api_key_create(caller.role, user_bound=True, has_user=True)
            try:
                issued = services.api_key_create(organization=caller.organization,
                                                 name=form.cleaned_data["name"] or "quick start",
                                                 created_by=caller.user, user=caller.user)
            except services.TenancyError as exc:
                attach_error(form, getattr(exc, "field", None), str(exc))
    summaries = selectors.collection_summaries(organization=caller.organization, principals=caller.principals,
                                               limit=DASHBOARD_CARDS)
    first = summaries[0].collection if summaries else None
    snippets = None
    if first is not None:
        snippets = search_snippets(base_url=request.build_absolute_uri("/").rstrip("/"), readable_id=first.readable_id,
                                   body={"query": "What is this collection about?", "limit": 5},
                                   api_key=issued.key if issued else "$AIRWEAVE_API_KEY", path="search/instant")
    attention = [(s.collection, c) for s in summaries for c in s.attention]
    response = render_page(request, caller, "ui/dashboard.html", summaries=summaries, health=health_line(),
                           form=form, issued=issued, snippets=snippets, first=first, attention=attention,
                           total=selectors.collection_count(organization=caller.organization))
    if issued:
        response["Cache-Control"] = "no-store"  # the page shows a secret once
    return response
