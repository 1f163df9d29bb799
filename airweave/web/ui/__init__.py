"""The web UI under /ui/: server-rendered pages (Django templates, htmx, a little plain JavaScript
for the sync and search streams) that call the same services and selectors as the REST API."""
