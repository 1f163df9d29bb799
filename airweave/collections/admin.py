"""The operator console for the data model. Source connections, syncs and sync jobs are in
connectors/admin.py (their forms and actions need the source registry and the sync services).

Entities, chunks and the index are read-only here: they are written by syncs only. Keyword
postings (KeywordPosting) are the one model not listed: Django's admin refuses models with a
composite primary key (AdminSite.register raises), and they are one row per chunk and term,
millions of them; KeywordStats summarises them.
"""
from django import forms
from django.conf import settings
from django.contrib import admin
from django.db.models import Count

from airweave.collections.models import AccessGroupMembership, Chunk, Collection, Entity, KeywordStats, SyncCursor
from airweave.collections.selectors import collection_find
from airweave.collections.services import (
    CollectionError, collection_create, collection_name_check, collection_params_check, collection_update,
)
from airweave.providers.catalog import embedding_models


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written by syncs: viewable and deletable, never added or edited by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class CollectionForm(forms.ModelForm):
    """A collection as the services check it (collection_params_check): on creation the embedding
    model is chosen from the catalog (its vector size follows) and an empty readable id is made
    from the name; afterwards only the name and sync_config change."""

    class Meta:
        model = Collection
        fields = ["organization", "name", "readable_id", "embedding_model_name", "sync_config"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.params = None

    def clean(self):
        cleaned = super().clean()
        try:
            if not self.instance._state.adding:  # only the name and sync_config change after creation
                if "name" in cleaned:
                    cleaned["name"] = collection_name_check(cleaned["name"])
                return cleaned
            if self.errors:
                return cleaned
            self.params = collection_params_check(name=cleaned.get("name"), readable_id=cleaned.get("readable_id") or None,
                                                  embedding_model_name=cleaned.get("embedding_model_name") or None)
        except CollectionError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, str(exc))
            return cleaned
        if collection_find(organization=cleaned["organization"], readable_id=self.params.readable_id):
            self.add_error("readable_id", f"a collection with readable_id '{self.params.readable_id}' already exists "
                                          "in this organization")
        return cleaned


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["readable_id", "name", "organization", "embedding_model_name", "vector_size",
                    "connection_count", "created_at"]
    list_filter = ["organization", "embedding_model_name"]
    search_fields = ["readable_id", "name"]
    readonly_fields = ["embedding_model_name", "vector_size", "created_at", "modified_at", "created_by",
                       "modified_by"]
    list_select_related = ["organization"]
    form = CollectionForm

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(connections=Count("source_connections"))

    @admin.display(description="source connections", ordering="connections")
    def connection_count(self, obj) -> int:
        return getattr(obj, "connections", 0)

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "embedding_model_name":
            return forms.ChoiceField(label="Embedding model", choices=[(n, n) for n in sorted(embedding_models())],
                                     initial=settings.AIRWEAVE_DEFAULT_EMBEDDING_MODEL,
                                     help_text="Pinned at creation: every chunk is embedded with it.")
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "readable_id" and field is not None:
            field.required = False
            field.help_text = "Lowercase letters and digits separated by hyphens; empty: made from the name."
        return field

    def get_readonly_fields(self, request, obj=None):
        # The organization, readable id and embedding model are pinned at creation; a new collection picks them.
        if obj:
            return ["organization", "readable_id", *self.readonly_fields]
        return ["vector_size", "created_at", "modified_at", "created_by", "modified_by"]

    def save_model(self, request, obj, form, change):
        """Saves through the services, with their checks (the same as POST and PATCH /collections)."""
        data = form.cleaned_data
        if change:
            collection_update(collection=obj, name=data["name"], sync_config=data.get("sync_config"),
                              modified_by=request.user)
            return
        params = form.params
        created = collection_create(organization=data["organization"], name=params.name,
                                    readable_id=params.readable_id, embedding_model_name=params.embedding_model_name,
                                    sync_config=data.get("sync_config"), created_by=request.user)
        obj.pk = created.pk
        obj.refresh_from_db()


@admin.register(Entity)
class EntityAdmin(ReadOnlyAdmin):
    list_display = ["name", "entity_type", "entity_id", "collection", "source_connection", "access_is_public",
                    "modified_at"]
    list_filter = ["entity_type", "access_is_public", "collection", "source_connection__short_name"]
    search_fields = ["name", "entity_id"]
    search_help_text = "Name or entity id; or one principal (user:<email>, group:<connection id>:<group id>)."
    list_select_related = ["collection", "source_connection"]
    readonly_fields = [f.name for f in Entity._meta.fields]

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if term.startswith(("user:", "group:")):  # who may see what: entities with this principal
            return queryset.filter(access_viewers__contains=[term]), False
        return super().get_search_results(request, queryset, search_term)


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdmin):
    list_display = ["public_id", "name", "chunk_index", "entity_type", "source_name", "collection", "dims",
                    "access_is_public"]
    list_filter = ["entity_type", "source_name", "dims", "access_is_public", "collection"]
    search_fields = ["original_entity_id", "name"]
    list_select_related = ["collection"]
    exclude = ["embedding"]  # hundreds of floats: not for people
    readonly_fields = [f.name for f in Chunk._meta.fields if f.name != "embedding"]

    @admin.display(description="chunk id", ordering="original_entity_id")
    def public_id(self, obj) -> str:
        return obj.public_id

    def get_queryset(self, request):
        return super().get_queryset(request).defer("embedding")


@admin.register(AccessGroupMembership)
class AccessGroupMembershipAdmin(ReadOnlyAdmin):
    list_display = ["group_id", "member", "source_connection", "organization", "modified_at"]
    list_filter = ["organization", "source_connection"]
    search_fields = ["group_id", "member"]
    list_select_related = ["source_connection", "organization"]
    readonly_fields = [f.name for f in AccessGroupMembership._meta.fields]


@admin.register(SyncCursor)
class SyncCursorAdmin(ReadOnlyAdmin):
    list_display = ["sync", "updated_at"]
    search_fields = ["sync__source_connection__name"]
    list_select_related = ["sync__source_connection"]
    readonly_fields = ["sync", "data", "updated_at"]


@admin.register(KeywordStats)
class KeywordStatsAdmin(ReadOnlyAdmin):
    list_display = ["collection_id", "chunk_count", "total_length"]
    search_fields = ["collection_id"]
    readonly_fields = ["collection_id", "chunk_count", "total_length"]

    def has_delete_permission(self, request, obj=None):
        return False  # recomputed by every sync job
