"""The explorer: browse a collection's entities by source, type and breadcrumb; an entity page with
its fields, its chunks and who may see it. Everything is filtered by the caller's access."""
from __future__ import annotations

from django.core.paginator import Paginator

from airweave.collections import selectors
from airweave.collections.models import Entity
from airweave.web.ui.access import collection_or_404, not_found, render_page, ui_view

PAGE_SIZE = 50


@ui_view
def entity_list(request, caller, readable_id):
    """Entities of the collection, filtered by `source`, `type`, `breadcrumb` and `q`, paged."""
    collection = collection_or_404(caller, readable_id)
    connections = {str(c.id): c for c in collection.connections}  # read by collection_find
    source = request.GET.get("source", "")
    source = source if source in connections else ""
    entity_type = request.GET.get("type", "")[:128]
    breadcrumb = request.GET.get("breadcrumb", "")[:1024].replace("\x00", "")
    search = request.GET.get("q", "")[:200].replace("\x00", "")
    try:
        number = max(1, int(request.GET.get("page", 1)))
    except ValueError:
        number = 1
    page = selectors.entity_browse(collection=collection, principals=caller.principals,
                                   source_connection_id=source or None, entity_type=entity_type,
                                   breadcrumb=breadcrumb, search=search, skip=(number - 1) * PAGE_SIZE,
                                   limit=PAGE_SIZE)
    paginator = Paginator(range(page.total), PAGE_SIZE)
    facets = [(connections.get(str(conn_id)), entity_type_, count)
              for (conn_id, entity_type_), count in sorted(page.facets.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]
    return render_page(request, caller, "ui/entities.html", collection=collection, page=page,
                       pager=paginator.get_page(number), facets=facets, connections=connections,
                       filters={"source": source, "type": entity_type, "breadcrumb": breadcrumb, "q": search})


@ui_view
def entity_page(request, caller, readable_id, entity_pk):
    """One entity: its fields, its chunks, its access principals resolved to members."""
    collection = collection_or_404(caller, readable_id)
    try:
        detail = selectors.entity_detail(collection=collection, id=entity_pk, principals=caller.principals)
    except Entity.DoesNotExist:
        raise not_found("Entity not found") from None
    return render_page(request, caller, "ui/entity.html", collection=collection, detail=detail,
                       entity=detail.entity)
