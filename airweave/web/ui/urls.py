"""Routes of the web UI under /ui/ (pages end with a slash; actions and fragments do not)."""
from django.urls import path

from airweave.web.ui.views import collections, dashboard, explorer, jobs, search, sources

C = "collections/<str:readable_id>/"

urlpatterns = [
    path("", dashboard.dashboard, name="ui_dashboard"),
    path("collections/", collections.collection_list, name="ui_collections"),
    path("cron-preview", collections.cron_preview, name="ui_cron_preview"),
    path(C, collections.collection_detail, name="ui_collection"),
    path(C + "delete", collections.collection_delete, name="ui_collection_delete"),
    path(C + "connections/<str:connection_id>/panel", collections.connection_panel, name="ui_connection_panel"),
    path(C + "connections/<str:connection_id>/action", collections.connection_action, name="ui_connection_action"),
    path(C + "connections/<str:connection_id>/jobs/", jobs.job_list, name="ui_jobs"),
    path(C + "connections/<str:connection_id>/reconnect", sources.reconnect, name="ui_reconnect"),
    path(C + "sources/", sources.source_catalog, name="ui_add_source"),
    path(C + "sources/<str:short_name>/", sources.source_configure, name="ui_configure_source"),
    path(C + "search", search.playground, name="ui_search"),
    path(C + "search/stream", search.playground_stream, name="ui_search_stream"),
    path(C + "entities/", explorer.entity_list, name="ui_entities"),
    path(C + "entities/<str:entity_pk>/", explorer.entity_page, name="ui_entity"),
]
