"""Request and response shapes of docs/api.md. Serializers validate and render; services decide."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from airweave.api.compat import note_deprecated, note_ignored
from airweave.collections.models import Collection, SourceConnection, SyncJob


class StrictSerializer(serializers.Serializer):
    """Ignores fields it does not declare, as the public Airweave API does, and names them in the
    answer's `Warning` header (airweave.api.compat) so a typo is still visible; with the context
    `{"reject_unknown": True}` (the websocket, where no header exists) they are an error instead.
    Text fields that receive a number or a boolean are refused (DRF would quietly turn 42 into "42")."""

    def _field_path(self) -> list[str]:
        path, node = [], self
        while node is not None and node.parent is not None:
            if node.field_name:  # the child of a list serializer has none
                path.insert(0, node.field_name)
            node = node.parent
        return path

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown and self.root.context.get("reject_unknown"):
                raise serializers.ValidationError({k: ["Unknown field."] for k in unknown})
            if unknown:
                prefix = self._field_path()
                for key in unknown:
                    note_ignored(".".join([*prefix, str(key)]))
                data = {k: v for k, v in data.items() if k in self.fields}
            # null for an optional field means "not given", as in the real API's pydantic models
            nulls = [k for k, v in data.items() if v is None and k in self.fields
                     and not self.fields[k].required and not self.fields[k].allow_null]
            if nulls:
                data = {k: v for k, v in data.items() if k not in nulls}
            not_text = sorted(name for name, field in self.fields.items()
                              if isinstance(field, serializers.CharField) and name in data
                              and data[name] is not None and not isinstance(data[name], str))
            if not_text:
                raise serializers.ValidationError({k: ["Must be a string."] for k in not_text})
        return super().to_internal_value(data)


# --- Collections ---
class CollectionCreateSerializer(StrictSerializer):
    name = serializers.CharField(min_length=4, max_length=64)
    readable_id = serializers.CharField(required=False, max_length=128)
    sync_config = serializers.JSONField(required=False, allow_null=True)
    embedding_model_name = serializers.CharField(
        required=False, help_text="An embedding model of defaults.yml, e.g. local/all-MiniLM-L6-v2 (the default) "
                                  "or openai/text-embedding-3-small. Pinned for the collection's life.")


class CollectionUpdateSerializer(StrictSerializer):
    name = serializers.CharField(min_length=4, max_length=64, required=False)
    sync_config = serializers.JSONField(required=False, allow_null=True)


class SourceConnectionSummarySerializer(serializers.Serializer):
    short_name = serializers.CharField()
    name = serializers.CharField()


class CollectionSerializer(serializers.ModelSerializer):
    organization_id = serializers.UUIDField()
    created_by_email = serializers.SerializerMethodField()
    modified_by_email = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField()
    source_connection_summaries = serializers.SerializerMethodField()

    class Meta:
        model = Collection
        fields = ["id", "name", "readable_id", "organization_id", "created_at", "modified_at", "created_by_email",
                  "modified_by_email", "status", "vector_size", "embedding_model_name", "sync_config",
                  "source_connection_summaries"]

    def get_created_by_email(self, obj) -> str | None:
        return obj.created_by.email if obj.created_by_id else None

    def get_modified_by_email(self, obj) -> str | None:
        return obj.modified_by.email if obj.modified_by_id else None

    def get_status(self, obj) -> str:
        return obj.status_label

    @extend_schema_field(SourceConnectionSummarySerializer(many=True))
    def get_source_connection_summaries(self, obj) -> list[dict]:
        return obj.connection_summaries


# --- Sources catalog ---
class ConfigFieldSerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    type = serializers.CharField()
    required = serializers.BooleanField()
    items_type = serializers.CharField(required=False)
    is_secret = serializers.BooleanField()
    enum_values = serializers.ListField(child=serializers.CharField(), required=False)


def source_payload(cls) -> dict:
    """The Source object of docs/api.md for a registered source class."""
    return {
        "name": cls.name,
        "short_name": cls.short_name,
        "description": cls.description or None,
        "class_name": cls.__name__,
        "auth_methods": list(cls.auth_methods),
        "oauth_type": cls.oauth_type,
        "requires_byoc": cls.requires_byoc,
        "auth_config_class": f"{cls.__name__}AuthConfig" if cls.auth_fields else None,
        "config_class": f"{cls.__name__}Config" if cls.config_fields else None,
        "auth_fields": {"fields": [f.as_dict() for f in cls.auth_fields]} if cls.auth_fields else None,
        "config_fields": {"fields": [f.as_dict() for f in cls.config_fields]},
        "labels": list(cls.labels),
        "supports_continuous": cls.supports_continuous,
        "federated_search": cls.federated_search,
        "supports_access_control": cls.supports_access_control,
        "mirrored_permissions": [{"permission": permission, "mirrored": mirrored}
                                 for permission, mirrored in cls.mirrored_permissions],
        "supports_browse_tree": cls.supports_browse_tree,
        "supports_temporal_relevance": cls.supports_temporal_relevance,
        "rate_limit_level": cls.rate_limit_level,
        "output_entity_definitions": [t.entity_type() for t in cls.entity_types],
    }


class MirroredPermissionSerializer(serializers.Serializer):
    """One (permission, mirrored?) pair of a source's `mirrored_permissions` declaration."""

    permission = serializers.CharField()
    mirrored = serializers.BooleanField()


class SourceSerializer(serializers.Serializer):
    name = serializers.CharField()
    short_name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    class_name = serializers.CharField()
    auth_methods = serializers.ListField(child=serializers.CharField())
    oauth_type = serializers.CharField(allow_null=True)
    requires_byoc = serializers.BooleanField()
    auth_config_class = serializers.CharField(allow_null=True)
    config_class = serializers.CharField(allow_null=True)
    auth_fields = serializers.JSONField(allow_null=True)
    config_fields = serializers.JSONField()
    labels = serializers.ListField(child=serializers.CharField())
    supports_continuous = serializers.BooleanField()
    federated_search = serializers.BooleanField()
    supports_access_control = serializers.BooleanField()
    mirrored_permissions = MirroredPermissionSerializer(many=True)
    supports_browse_tree = serializers.BooleanField()
    supports_temporal_relevance = serializers.BooleanField()
    rate_limit_level = serializers.CharField(allow_null=True)
    output_entity_definitions = serializers.ListField(child=serializers.CharField())


# --- Source connections and jobs ---
class ScheduleSerializer(StrictSerializer):
    cron = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    continuous = serializers.BooleanField(required=False, default=False)
    cursor_field = serializers.CharField(required=False, allow_null=True, allow_blank=True)


class AuthenticationSerializer(StrictSerializer):
    """One of docs/api.md's three shapes, told apart by their fields (the service checks the combination):
    direct `{credentials}`, token injection `{access_token, refresh_token?, expires_at?}`, browser /
    bring-your-own-client `{redirect_uri?, client_id?, client_secret?, consumer_key?, consumer_secret?}`."""

    credentials = serializers.DictField(required=False)
    access_token = serializers.CharField(required=False)
    refresh_token = serializers.CharField(required=False, allow_null=True)
    expires_at = serializers.JSONField(required=False, allow_null=True,
                                       help_text="Epoch seconds or an ISO-8601 date-time")
    redirect_uri = serializers.URLField(required=False, allow_null=True,
                                        help_text="Where the browser returns once the authorization ends")
    client_id = serializers.CharField(required=False)
    client_secret = serializers.CharField(required=False)
    consumer_key = serializers.CharField(required=False)
    consumer_secret = serializers.CharField(required=False)
    type = serializers.ChoiceField(
        choices=["direct", "oauth_token", "oauth_browser", "oauth_byoc", "auth_provider"], required=False,
        help_text="Optional name of the shape (Airweave's CLI sends it); the fields decide.")
    provider_readable_id = serializers.CharField(
        required=False, help_text="Airweave's auth-provider shape (Composio, Pipedream, ...): accepted, and "
                                  "answered 422, as this server connects to no auth provider.")
    provider_config = serializers.DictField(required=False, allow_null=True)

    def to_internal_value(self, data):
        # Ignoring every field would silently pick another flow: an object with no known field is an error.
        if isinstance(data, dict) and data and not set(data) & set(self.fields):
            raise serializers.ValidationError({k: ["Unknown field."] for k in sorted(data)})
        return super().to_internal_value(data)



class SourceConnectionCreateSerializer(StrictSerializer):
    short_name = serializers.CharField()
    readable_collection_id = serializers.CharField()
    name = serializers.CharField(required=False, max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    config = serializers.DictField(required=False, allow_null=True)
    schedule = ScheduleSerializer(required=False, allow_null=True)
    sync_immediately = serializers.BooleanField(required=False, default=True)
    authentication = AuthenticationSerializer(required=False, allow_null=True)
    redirect_url = serializers.URLField(
        required=False, allow_null=True,
        help_text="Where the browser returns after an OAuth flow (the same as authentication.redirect_uri).")


class SourceConnectionUpdateSerializer(StrictSerializer):
    name = serializers.CharField(required=False, max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    config = serializers.DictField(required=False)
    schedule = ScheduleSerializer(required=False, allow_null=True)
    authentication = AuthenticationSerializer(
        required=False, allow_null=True, help_text="New direct credentials `{credentials: {...}}` (direct auth only).")


class SyncJobDetailsSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=SyncJob.Status.choices)
    started_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    duration_seconds = serializers.FloatField(allow_null=True)
    entities_inserted = serializers.IntegerField()
    entities_updated = serializers.IntegerField()
    entities_deleted = serializers.IntegerField()
    entities_failed = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)


class SourceConnectionJobSerializer(SyncJobDetailsSerializer):
    """A job as `GET /source-connections/{id}/jobs` lists it: the summary and the rest of its counters."""

    source_connection_id = serializers.UUIDField()
    entities_kept = serializers.IntegerField()
    entities_skipped = serializers.IntegerField()
    error_category = serializers.CharField(allow_null=True)
    error_details = serializers.JSONField(allow_null=True)


class AuthenticationDetailsSerializer(serializers.Serializer):
    method = serializers.ChoiceField(choices=["direct", "oauth_browser", "oauth_token", "oauth_byoc", "auth_provider"])
    authenticated = serializers.BooleanField()
    authenticated_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(required=False, help_text="When the access token expires (OAuth).")
    auth_url = serializers.CharField(required=False, help_text="While a browser flow waits: the link to open (once).")
    auth_url_expires = serializers.DateTimeField(required=False)
    redirect_url = serializers.CharField(required=False, allow_null=True)


class ScheduleDetailsSerializer(serializers.Serializer):
    cron = serializers.CharField(allow_null=True)
    next_run = serializers.DateTimeField(allow_null=True)
    continuous = serializers.BooleanField()
    cursor_field = serializers.CharField(allow_null=True)


class SyncDetailsSerializer(serializers.Serializer):
    total_runs = serializers.IntegerField(help_text="Every job of the connection (exact).")
    successful_runs = serializers.IntegerField()
    failed_runs = serializers.IntegerField()
    last_job = SyncJobDetailsSerializer(allow_null=True)


class EntityTypeStatsSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    last_updated = serializers.DateTimeField(allow_null=True)


class EntitySummarySerializer(serializers.Serializer):
    total_entities = serializers.IntegerField()
    by_type = serializers.DictField(child=EntityTypeStatsSerializer())


class SourceConnectionSerializer(serializers.Serializer):
    """SourceConnection of docs/api.md (and of the public Airweave API); what every detail answer renders."""

    id = serializers.UUIDField()
    organization_id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    short_name = serializers.CharField()
    readable_collection_id = serializers.CharField()
    status = serializers.ChoiceField(choices=SourceConnection.Status.choices)
    created_at = serializers.DateTimeField()
    modified_at = serializers.DateTimeField()
    auth = AuthenticationDetailsSerializer()
    config = serializers.JSONField(allow_null=True)
    schedule = ScheduleDetailsSerializer(allow_null=True)
    sync = SyncDetailsSerializer()
    sync_id = serializers.UUIDField(allow_null=True)
    entities = EntitySummarySerializer()
    error_category = serializers.CharField(allow_null=True)
    error_message = serializers.CharField(allow_null=True)
    federated_search = serializers.BooleanField()


class SourceConnectionListItemSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    short_name = serializers.CharField()
    readable_collection_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    modified_at = serializers.DateTimeField()
    is_authenticated = serializers.BooleanField()
    entity_count = serializers.IntegerField()
    federated_search = serializers.BooleanField()
    auth_method = serializers.ChoiceField(choices=["direct", "oauth_browser", "oauth_token", "oauth_byoc", "auth_provider"])
    status = serializers.ChoiceField(choices=SourceConnection.Status.choices)


# --- Search ---
class FilterConditionSerializer(serializers.Serializer):
    field = serializers.CharField()
    operator = serializers.CharField()
    value = serializers.JSONField()


class FilterGroupSerializer(serializers.Serializer):
    conditions = FilterConditionSerializer(many=True)


class InstantSearchRequestSerializer(StrictSerializer):
    query = serializers.CharField(max_length=2000, trim_whitespace=True)
    retrieval_strategy = serializers.ChoiceField(
        choices=["hybrid", "semantic", "keyword", "neural"], required=False, default="hybrid",
        help_text="\"neural\" (what Airweave's CLI sends for --strategy neural) is taken as semantic.")
    filter = serializers.JSONField(required=False, allow_null=True, help_text="List of FilterGroup: AND inside a group, OR across groups.")
    limit = serializers.IntegerField(required=False, default=100, min_value=1, max_value=1000)
    offset = serializers.IntegerField(required=False, default=0, min_value=0)
    collapse_entities = serializers.BooleanField(
        required=False, default=False, help_text="Return at most one chunk (the best) per entity.")

    def validate_retrieval_strategy(self, value):
        return "semantic" if value == "neural" else value


class SearchResultSerializer(serializers.Serializer):
    entity_id = serializers.CharField()
    name = serializers.CharField()
    relevance_score = serializers.FloatField()
    breadcrumbs = serializers.JSONField()
    created_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True)
    textual_representation = serializers.CharField()
    airweave_system_metadata = serializers.JSONField()
    access = serializers.JSONField()
    web_url = serializers.CharField()
    url = serializers.CharField(allow_null=True)
    raw_source_fields = serializers.JSONField()


class SearchResponseSerializer(serializers.Serializer):
    results = SearchResultSerializer(many=True)


class PipelineSearchRequestSerializer(StrictSerializer):
    query = serializers.CharField(max_length=2000)
    retrieval_strategy = serializers.ChoiceField(choices=["hybrid", "neural", "semantic", "keyword"], required=False)
    filter = serializers.JSONField(required=False, allow_null=True,
                                   help_text="Qdrant-style filter: must / should / must_not, minimum_should_match.")
    offset = serializers.IntegerField(required=False, default=0, min_value=0)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=1000)
    source_connection_ids = serializers.ListField(child=serializers.UUIDField(), required=False, allow_null=True)
    expand_query = serializers.BooleanField(required=False, allow_null=True, default=None)
    interpret_filters = serializers.BooleanField(required=False, allow_null=True, default=None)
    rerank = serializers.BooleanField(required=False, allow_null=True, default=None)
    generate_answer = serializers.BooleanField(required=False, allow_null=True, default=None)
    recency_weight = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1,
                                            help_text="Blend freshness into the score (0 = off).")
    # The older request shapes of the public API, still accepted (X-API-Deprecation names them).
    temporal_relevance = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1,
                                                help_text="Deprecated: recency_weight.")
    response_type = serializers.ChoiceField(choices=["raw", "completion"], required=False, allow_null=True,
                                            help_text="Deprecated: completion = generate_answer true.")
    search_method = serializers.ChoiceField(choices=["hybrid", "neural", "keyword"], required=False, allow_null=True,
                                            help_text="Deprecated: retrieval_strategy.")
    recency_bias = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1,
                                          help_text="Deprecated: recency_weight.")
    enable_reranking = serializers.BooleanField(required=False, allow_null=True, help_text="Deprecated: rerank.")
    enable_query_interpretation = serializers.BooleanField(required=False, allow_null=True,
                                                           help_text="Deprecated: interpret_filters.")
    expansion_strategy = serializers.ChoiceField(choices=["auto", "llm", "no_expansion"], required=False,
                                                 allow_null=True, help_text="Deprecated: expand_query.")
    score_threshold = serializers.FloatField(required=False, allow_null=True,
                                             help_text="Deprecated and ignored: scores of fused rankings are not "
                                                       "comparable across queries.")

    LEGACY = {"temporal_relevance": "recency_weight", "recency_bias": "recency_weight",
              "search_method": "retrieval_strategy", "enable_reranking": "rerank",
              "enable_query_interpretation": "interpret_filters", "response_type": "generate_answer",
              "expansion_strategy": "expand_query", "score_threshold": None}

    def validate(self, data):
        """Map the legacy fields onto the current ones (a current field given too wins)."""
        for old, new in self.LEGACY.items():
            if old not in data:
                continue
            value = data.pop(old)
            note_deprecated(f"{old} is deprecated" + (f"; use {new}" if new else " and ignored"))
            if new is None or value is None:
                continue
            if old == "response_type":
                value = value == "completion"
            elif old == "expansion_strategy":
                value = value != "no_expansion"
            if data.get(new) is None:
                data[new] = value
        return data


class PipelineResultSerializer(serializers.Serializer):
    id = serializers.CharField(allow_null=True, help_text="The chunk row's id; null for a federated source's result.")
    score = serializers.FloatField()
    entity_id = serializers.CharField()
    name = serializers.CharField()
    textual_representation = serializers.CharField()
    created_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True)
    breadcrumbs = serializers.JSONField()
    system_metadata = serializers.JSONField()
    access = serializers.JSONField()
    source_fields = serializers.JSONField()
    web_url = serializers.CharField()


class PipelineSearchResponseSerializer(serializers.Serializer):
    results = PipelineResultSerializer(many=True)
    completion = serializers.CharField(allow_null=True)
    providers = serializers.DictField(child=serializers.CharField(), help_text=(
        "Which provider answered each operation that used one, e.g. "
        "{\"query_expansion\": \"groq/llama-3.3-70b-versatile\", \"generate_answer\": \"local/extractive\"}."))


class ClassicSearchRequestSerializer(StrictSerializer):
    query = serializers.CharField(max_length=2000)
    filter = serializers.JSONField(required=False, allow_null=True, help_text="List of FilterGroup.")
    limit = serializers.IntegerField(required=False, default=100, min_value=1, max_value=1000)
    offset = serializers.IntegerField(required=False, default=0, min_value=0)


class AgenticSearchRequestSerializer(StrictSerializer):
    query = serializers.CharField(max_length=2000)
    thinking = serializers.BooleanField(required=False, default=False)
    filter = serializers.JSONField(required=False, allow_null=True, help_text="List of FilterGroup.")
    limit = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1, max_value=1000,
                                     help_text="Most results; null or absent: the agent decides.")


# --- Push API (POST /collections/{readable_id}/documents) ---
def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise serializers.ValidationError("must not contain NUL characters")
    return value


class PushBreadcrumbSerializer(StrictSerializer):
    entity_id = serializers.CharField(max_length=1024, validators=[_no_nul])
    name = serializers.CharField(max_length=1024, required=False, allow_blank=True, validators=[_no_nul])
    entity_type = serializers.RegexField(r"^[A-Za-z][A-Za-z0-9_]{0,63}$", required=False)


class PushAccessSerializer(StrictSerializer):
    viewers = serializers.ListField(child=serializers.CharField(max_length=320), required=False, max_length=1000)
    is_public = serializers.BooleanField(required=False, default=True)


class PushDocumentSerializer(StrictSerializer):
    id = serializers.CharField(max_length=1024, help_text="Your id of the document: an upsert replaces the "
                               "document with the same id.", validators=[_no_nul])
    text = serializers.CharField(max_length=1_000_000, trim_whitespace=False, validators=[_no_nul])
    name = serializers.CharField(max_length=1024, required=False, allow_blank=True, validators=[_no_nul])
    breadcrumbs = PushBreadcrumbSerializer(many=True, required=False, max_length=50)
    created_at = serializers.DateTimeField(required=False, allow_null=True)
    updated_at = serializers.DateTimeField(required=False, allow_null=True)
    web_url = serializers.CharField(max_length=4096, required=False, allow_blank=True)
    url = serializers.CharField(max_length=4096, required=False, allow_blank=True)
    metadata = serializers.DictField(required=False, help_text="Returned as raw_source_fields.")
    access = PushAccessSerializer(required=False)

    def validate_metadata(self, value):
        import json

        if len(json.dumps(value, default=str)) > 65536:
            raise serializers.ValidationError("must be at most 64 KB of JSON")
        return value


class PushRequestSerializer(StrictSerializer):
    documents = PushDocumentSerializer(many=True, required=False, default=list)
    delete_ids = serializers.ListField(child=serializers.CharField(max_length=1024), required=False, default=list)

    def validate_documents(self, value):
        from django.conf import settings

        limit = settings.AIRWEAVE_PUSH_MAX_DOCUMENTS
        if len(value) > limit:
            raise serializers.ValidationError(f"at most {limit} documents per request; send several requests")
        seen = set()
        for i, doc in enumerate(value):
            if doc["id"] in seen:
                raise serializers.ValidationError(f"documents[{i}]: id {doc['id']!r} appears twice in this request")
            seen.add(doc["id"])
        return value

    def validate_delete_ids(self, value):
        if len(value) > 1000:
            raise serializers.ValidationError("at most 1000 ids per request")
        return list(dict.fromkeys(value))

    def validate(self, data):
        if not data["documents"] and not data["delete_ids"]:
            raise serializers.ValidationError("send at least one of 'documents' or 'delete_ids'")
        both = {d["id"] for d in data["documents"]} & set(data["delete_ids"])
        if both:
            raise serializers.ValidationError(f"id(s) both upserted and deleted: {', '.join(sorted(both))}")
        return data


# --- API keys ---
class APIKeyCreateSerializer(StrictSerializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
    expiration_days = serializers.IntegerField(required=False, min_value=1, max_value=365, default=90,
                                               help_text="Days until the key expires, 1 to 365 (default 90).")
    user_bound = serializers.BooleanField(
        required=False, default=False,
        help_text="Bind the key to the calling user: it then acts as that user (access control applies). "
                  "Organization-wide keys (false) need the admin role.")


class APIKeyRotateSerializer(StrictSerializer):
    expiration_days = serializers.IntegerField(required=False, min_value=1, max_value=365, default=90)


class APIKeySerializer(serializers.Serializer):
    """APIKey of the public Airweave API, plus `name`, `key_prefix`, `user_id`, `user_email`.
    `decrypted_key` is present only in the answers of creation and rotation."""

    id = serializers.UUIDField()
    organization_id = serializers.UUIDField()
    name = serializers.CharField()
    key_prefix = serializers.CharField()
    user_id = serializers.UUIDField(allow_null=True)
    user_email = serializers.EmailField(allow_null=True)
    created_at = serializers.DateTimeField()
    modified_at = serializers.DateTimeField()
    last_used_date = serializers.DateTimeField(allow_null=True)
    expiration_date = serializers.DateTimeField(allow_null=True)
    created_by_email = serializers.EmailField(allow_null=True)
    modified_by_email = serializers.EmailField(allow_null=True)
    decrypted_key = serializers.CharField(required=False)


def api_key_payload(api_key, key: str | None = None) -> dict:
    """The APIKey shape of one key; `key` (the secret) only right after creation or rotation."""
    payload = {
        "id": api_key.id, "organization_id": api_key.organization_id, "name": api_key.name,
        "key_prefix": f"aw_{api_key.prefix}", "user_id": api_key.user_id,
        "user_email": api_key.user.email if api_key.user_id else None,
        "created_at": api_key.created_at, "modified_at": api_key.modified_at, "last_used_date": api_key.last_used_at,
        "expiration_date": api_key.expires_at,
        "created_by_email": api_key.created_by.email if api_key.created_by_id else None,
        "modified_by_email": api_key.modified_by.email if api_key.modified_by_id else None,
    }
    if key is not None:
        payload["decrypted_key"] = key
    return APIKeySerializer(payload).data


# --- Organizations, the current user, health ---
class OrganizationWithRoleSerializer(serializers.Serializer):
    """OrganizationWithRole of the public Airweave API."""

    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    modified_at = serializers.DateTimeField()
    role = serializers.ChoiceField(choices=["owner", "admin", "member"], allow_null=True)
    is_primary = serializers.BooleanField()


def organization_payload(organization, role: str | None, primary: bool) -> dict:
    """One organization with the caller's role in it."""
    return {"id": organization.id, "name": organization.name, "description": None,
            "created_at": organization.created_at, "modified_at": organization.modified_at,
            "role": role, "is_primary": primary}


class UserOrganizationSerializer(serializers.Serializer):
    organization = OrganizationWithRoleSerializer()
    role = serializers.ChoiceField(choices=["owner", "admin", "member"], allow_null=True)
    is_primary = serializers.BooleanField()


class UserSerializer(serializers.Serializer):
    """User of the public Airweave API (`auth0_id` is always null: this server is its own identity provider)."""

    id = serializers.UUIDField()
    email = serializers.EmailField()
    full_name = serializers.CharField(allow_blank=True, allow_null=True)
    picture = serializers.CharField(allow_null=True)
    auth0_id = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    modified_at = serializers.DateTimeField()
    primary_organization_id = serializers.UUIDField(allow_null=True)
    user_organizations = UserOrganizationSerializer(many=True)


def user_payload(user, pairs: list[tuple], primary) -> dict:
    """The User shape for `user` with its (organization, role) pairs; `primary` is the current organization."""
    return {"id": user.id, "email": user.email, "full_name": user.full_name or None, "picture": None,
            "auth0_id": None, "created_at": user.date_joined, "modified_at": user.date_joined,
            "primary_organization_id": primary.id if primary else None,
            "user_organizations": [{"organization": organization_payload(org, role, primary is not None and org.pk == primary.pk),
                                    "role": role, "is_primary": primary is not None and org.pk == primary.pk}
                                   for org, role in pairs]}


class HealthSerializer(serializers.Serializer):
    status = serializers.CharField()


class ReadinessCheckSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    detail = serializers.CharField()
    fix = serializers.CharField(required=False)


class ReadinessSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ready", "not_ready"])
    checks = serializers.DictField(child=ReadinessCheckSerializer())
    detail = serializers.CharField(required=False, help_text="What is wrong, and the fix, when not ready.")


# --- Webhooks (the shapes of Airweave's SDK: WebhookSubscription, WebhookMessage, DeliveryAttempt, RecoveryTask) ---
WEBHOOK_EVENT_TYPES = ["sync.pending", "sync.running", "sync.completed", "sync.failed", "sync.cancelled",
                       "source_connection.created", "source_connection.auth_completed", "source_connection.deleted",
                       "collection.created", "collection.updated", "collection.deleted"]


class WebhookSubscriptionCreateSerializer(StrictSerializer):
    url = serializers.URLField(max_length=2048, help_text="Where events are POSTed (http or https).")
    event_types = serializers.ListField(child=serializers.ChoiceField(choices=WEBHOOK_EVENT_TYPES), min_length=1)
    secret = serializers.CharField(required=False, allow_null=True, min_length=24, help_text=(
        "Signing secret, whsec_ + base64 of 24 to 64 bytes; generated when absent."))
    description = serializers.CharField(required=False, allow_blank=True, max_length=500)


class WebhookSubscriptionUpdateSerializer(StrictSerializer):
    url = serializers.URLField(max_length=2048, required=False)
    event_types = serializers.ListField(child=serializers.ChoiceField(choices=WEBHOOK_EVENT_TYPES), min_length=1,
                                        required=False)
    disabled = serializers.BooleanField(required=False)
    recover_since = serializers.DateTimeField(required=False, allow_null=True, help_text=(
        "When re-enabling, send again what failed or was not sent since this time."))


class WebhookRecoverSerializer(StrictSerializer):
    since = serializers.DateTimeField()
    until = serializers.DateTimeField(required=False, allow_null=True)


class DeliveryAttemptSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    message_id = serializers.UUIDField()
    endpoint_id = serializers.UUIDField(help_text="The subscription's id.")
    response = serializers.CharField(allow_blank=True, allow_null=True, help_text="The first 1000 characters of the answer, or the error.")
    response_status_code = serializers.IntegerField(help_text="0 when no answer came (refused, timed out).")
    status = serializers.ChoiceField(choices=["success", "failed"])
    timestamp = serializers.DateTimeField()
    url = serializers.CharField()
    duration_ms = serializers.IntegerField()
    attempt = serializers.IntegerField()
    trigger = serializers.CharField()


def delivery_attempt_payload(attempt) -> dict:
    return {"id": attempt.id, "message_id": attempt.message_id, "endpoint_id": attempt.subscription_id,
            "response": attempt.response, "response_status_code": attempt.response_status_code,
            "status": attempt.status, "timestamp": attempt.created_at, "url": attempt.url,
            "duration_ms": attempt.duration_ms, "attempt": attempt.number, "trigger": attempt.trigger}


class WebhookSubscriptionSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    url = serializers.CharField()
    filter_types = serializers.ListField(child=serializers.CharField(), help_text="The subscribed event types.")
    disabled = serializers.BooleanField()
    description = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    health_status = serializers.ChoiceField(choices=["healthy", "degraded", "failing", "unknown"])


class WebhookSubscriptionDetailSerializer(WebhookSubscriptionSerializer):
    delivery_attempts = DeliveryAttemptSerializer(many=True)
    secret = serializers.CharField(required=False, help_text="Only with ?include_secret=true.")


def webhook_subscription_payload(subscription, health: str, attempts=None, secret: str | None = None) -> dict:
    payload = {"id": subscription.id, "url": subscription.url, "filter_types": subscription.event_types,
               "disabled": subscription.disabled, "description": subscription.description or None,
               "created_at": subscription.created_at, "updated_at": subscription.updated_at, "health_status": health}
    if attempts is not None:
        payload["delivery_attempts"] = [delivery_attempt_payload(a) for a in attempts]
    if secret is not None:
        payload["secret"] = secret
    return payload


class WebhookMessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    event_type = serializers.CharField()
    payload = serializers.JSONField()
    timestamp = serializers.DateTimeField()
    channels = serializers.ListField(child=serializers.CharField(), allow_null=True)
    tags = serializers.ListField(child=serializers.CharField(), allow_null=True)


class WebhookMessageWithAttemptsSerializer(WebhookMessageSerializer):
    delivery_attempts = DeliveryAttemptSerializer(many=True, required=False, help_text="With ?include_attempts=true.")


def webhook_message_payload(message, attempts=None) -> dict:
    payload = {"id": message.id, "event_type": message.event_type, "payload": message.payload,
               "timestamp": message.created_at, "channels": None, "tags": None}
    if attempts is not None:
        payload["delivery_attempts"] = [delivery_attempt_payload(a) for a in attempts]
    return payload


class RecoveryTaskSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="Identifies this recovery in the server log; it is not stored.")
    status = serializers.ChoiceField(choices=["running", "completed"],
                                     help_text="running: messages were queued; completed: nothing to send.")
    queued_messages = serializers.IntegerField()


class NotificationSettingsSerializer(serializers.Serializer):
    """GET /source-connections/{id}/notifications (docs/notifications.md)."""

    supported = serializers.BooleanField(help_text="Whether the source's vendor sends change notifications.")
    vendor = serializers.CharField(allow_null=True)
    url = serializers.CharField(allow_null=True, help_text="The URL to register at the vendor; keep it private.")
    secret_origin = serializers.ChoiceField(choices=["vendor", "handshake", "chosen", "product"], allow_null=True)
    secret_set = serializers.BooleanField(help_text="Whether a signing secret is set or was learned.")
    last_notified_at = serializers.DateTimeField(allow_null=True)
    manages_subscription = serializers.BooleanField(
        help_text="Whether this server creates and renews the vendor's subscription (POST .../notifications/subscription).")
    subscription = serializers.JSONField(allow_null=True, help_text="{id, expires_at} of that subscription, or null.")


class NotificationSecretSerializer(serializers.Serializer):
    """PUT /source-connections/{id}/notifications: the vendor's signing secret (null or "" clears it)."""

    signing_secret = serializers.CharField(allow_null=True, allow_blank=True, max_length=512, trim_whitespace=True)
