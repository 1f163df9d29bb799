"""REST API routes (docs/api.md). Written without trailing slashes; airweave.api.compat serves both forms."""
from django.urls import path, register_converter
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from airweave.api import schema  # noqa: F401  (registers the OpenAPI security scheme)
from airweave.api.compat import ApiUUIDConverter
from airweave.api.views import (
    account, api_keys, collections, documents, health, metrics, notifications, search, source_connections, sources, sync,
    webhooks,
)

register_converter(ApiUUIDConverter, "id")

urlpatterns = [
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi-schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi-schema"), name="api-docs"),
    path("collections", collections.CollectionListView.as_view()),
    path("collections/count", collections.CollectionCountView.as_view()),
    path("collections/<str:readable_id>", collections.CollectionDetailView.as_view()),
    path("collections/<str:readable_id>/source-connections",
         source_connections.CollectionSourceConnectionListView.as_view()),
    path("collections/<str:readable_id>/documents", documents.DocumentPushView.as_view()),
    path("collections/<str:readable_id>/search", search.PipelineSearchView.as_view()),
    path("collections/<str:readable_id>/search/stream", search.PipelineSearchStreamView.as_view()),
    path("collections/<str:readable_id>/search/instant", search.InstantSearchView.as_view()),
    path("collections/<str:readable_id>/search/classic", search.ClassicSearchView.as_view()),
    path("collections/<str:readable_id>/search/agentic", search.AgenticSearchView.as_view()),
    path("collections/<str:readable_id>/search/agentic/stream", search.AgenticSearchStreamView.as_view()),
    path("sources", sources.SourceListView.as_view()),
    path("sources/<str:short_name>", sources.SourceDetailView.as_view()),
    path("source-connections", source_connections.SourceConnectionListView.as_view()),
    path("source-connections/callback", source_connections.SourceConnectionCallbackView.as_view()),
    path("source-connections/authorize/<str:claim>", source_connections.SourceConnectionAuthorizeView.as_view()),
    path("source-connections/<id:id>", source_connections.SourceConnectionDetailView.as_view()),
    path("source-connections/<id:id>/verify-oauth", source_connections.SourceConnectionVerifyOAuthView.as_view()),
    path("source-connections/<id:id>/reinitiate-oauth", source_connections.SourceConnectionReinitiateOAuthView.as_view()),
    path("source-connections/<id:id>/run", source_connections.SourceConnectionRunView.as_view()),
    path("source-connections/<id:id>/notify/<str:token>", notifications.notify_view),
    path("source-connections/<id:id>/notifications", notifications.NotificationSettingsView.as_view()),
    path("source-connections/<id:id>/notifications/subscription", notifications.NotificationSubscriptionView.as_view()),
    path("source-connections/<id:id>/notifications/rotate", notifications.NotificationTokenRotateView.as_view()),
    path("source-connections/<id:id>/jobs", source_connections.SourceConnectionJobsView.as_view()),
    path("source-connections/<id:id>/jobs/<id:job_id>/cancel", source_connections.SourceConnectionJobCancelView.as_view()),
    path("sync/job/<id:job_id>/subscribe", sync.SyncJobSubscribeView.as_view()),
    path("sync/job/<id:job_id>/subscribe-state", sync.SyncJobSubscribeStateView.as_view()),
    path("health", health.HealthView.as_view()),
    path("health/live", health.LivenessView.as_view()),
    path("health/ready", health.ReadinessView.as_view()),
    path("metrics", metrics.metrics_view),
    path("organizations", account.OrganizationListView.as_view()),
    path("users/me", account.CurrentUserView.as_view()),
    path("webhooks/subscriptions", webhooks.WebhookSubscriptionListView.as_view()),
    path("webhooks/subscriptions/<id:id>", webhooks.WebhookSubscriptionDetailView.as_view()),
    path("webhooks/subscriptions/<id:id>/recover", webhooks.WebhookRecoverView.as_view()),
    path("webhooks/messages", webhooks.WebhookMessageListView.as_view()),
    path("webhooks/messages/<id:id>", webhooks.WebhookMessageDetailView.as_view()),
    path("api-keys", api_keys.APIKeyListView.as_view()),
    path("api-keys/<id:id>", api_keys.APIKeyDetailView.as_view()),
    path("api-keys/<id:id>/rotate", api_keys.APIKeyRotateView.as_view()),
]
