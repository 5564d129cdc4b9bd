from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="PoolFields")


@_attrs_define
class PoolFields:
    """`POST /pools` and `PATCH /pools/{id}` (on a change, a field left out keeps its value).

    Example:
        {'failover_after_seconds': 300, 'line_ids': ['line_01...', 'line_02...'], 'name': 'Support numbers'}

    Attributes:
        failover_after_seconds (int | None | Unset): How long a line of the pool may be paused, flagged or offline
            before the messages waiting
            on it move to another of the pool's lines: 5 to 259,200 seconds, default 300.
        line_ids (list[str] | None | Unset): The organisation's own lines, 1 to 50, each once.
        name (None | str | Unset): 1 to 100 characters.
    """

    failover_after_seconds: int | None | Unset = UNSET
    line_ids: list[str] | None | Unset = UNSET
    name: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        failover_after_seconds: int | None | Unset
        if isinstance(self.failover_after_seconds, Unset):
            failover_after_seconds = UNSET
        else:
            failover_after_seconds = self.failover_after_seconds

        line_ids: list[str] | None | Unset
        if isinstance(self.line_ids, Unset):
            line_ids = UNSET
        elif isinstance(self.line_ids, list):
            line_ids = self.line_ids

        else:
            line_ids = self.line_ids

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if failover_after_seconds is not UNSET:
            field_dict["failover_after_seconds"] = failover_after_seconds
        if line_ids is not UNSET:
            field_dict["line_ids"] = line_ids
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_failover_after_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        failover_after_seconds = _parse_failover_after_seconds(d.pop("failover_after_seconds", UNSET))

        def _parse_line_ids(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                line_ids_type_0 = cast(list[str], data)

                return line_ids_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        line_ids = _parse_line_ids(d.pop("line_ids", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        pool_fields = cls(
            failover_after_seconds=failover_after_seconds,
            line_ids=line_ids,
            name=name,
        )

        pool_fields.additional_properties = d
        return pool_fields

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
