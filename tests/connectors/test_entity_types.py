"""An `entity_type` names one thing: two sources may share an entity class, never a name."""
from __future__ import annotations

from connectors.registry import all_sources


def test_no_two_entity_classes_share_a_name():
    owners: dict[str, tuple[type, list[str]]] = {}
    clashes = []
    for source_cls in all_sources():
        for entity_cls in source_cls.entity_types:
            name = entity_cls.entity_type()
            known = owners.setdefault(name, (entity_cls, []))
            if known[0] is not entity_cls:
                clashes.append(f"{name}: {known[0].__module__} ({', '.join(known[1])}) and "
                               f"{entity_cls.__module__} ({source_cls.short_name})")
            else:
                known[1].append(source_cls.short_name)
    assert clashes == []
