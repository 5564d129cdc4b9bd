from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Pool")


@_attrs_define
class Pool:
    """A sender pool.

    Attributes:
        created_at (datetime.datetime):
        failover_after_seconds (int):
        id (str): `pool_…`
        line_ids (list[str]): Its lines, in the order given.
        name (str):
    """

    created_at: datetime.datetime
    failover_after_seconds: int
    id: str
    line_ids: list[str]
    name: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        failover_after_seconds = self.failover_after_seconds

        id = self.id

        line_ids = self.line_ids

        name = self.name

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "failover_after_seconds": failover_after_seconds,
                "id": id,
                "line_ids": line_ids,
                "name": name,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        failover_after_seconds = d.pop("failover_after_seconds")

        id = d.pop("id")

        line_ids = cast(list[str], d.pop("line_ids"))

        name = d.pop("name")

        pool = cls(
            created_at=created_at,
            failover_after_seconds=failover_after_seconds,
            id=id,
            line_ids=line_ids,
            name=name,
        )

        pool.additional_properties = d
        return pool

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
