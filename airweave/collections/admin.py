from django.contrib import admin

from airweave.collections.models import Collection, Entity, SourceConnection, SyncJob


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["readable_id", "name", "organization", "embedding_model_name", "vector_size", "created_at"]
    list_filter = ["organization", "embedding_model_name"]
    search_fields = ["readable_id", "name"]
    readonly_fields = ["embedding_model_name", "vector_size"]


@admin.register(SourceConnection)
class SourceConnectionAdmin(admin.ModelAdmin):
    list_display = ["name", "short_name", "collection", "organization", "status", "modified_at"]
    list_filter = ["short_name", "status", "organization"]
    search_fields = ["name", "collection__readable_id"]
    exclude = ["encrypted_credentials"]


@admin.register(SyncJob)
class SyncJobAdmin(admin.ModelAdmin):
    list_display = ["id", "source_connection", "status", "started_at", "completed_at", "entities_inserted",
                    "entities_updated", "entities_deleted", "entities_kept", "entities_skipped", "entities_failed"]
    list_filter = ["status", "organization"]
    readonly_fields = [f.name for f in SyncJob._meta.fields]


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = ["name", "entity_type", "entity_id", "collection", "modified_at"]
    list_filter = ["entity_type", "collection"]
    search_fields = ["name", "entity_id"]
    readonly_fields = [f.name for f in Entity._meta.fields]
