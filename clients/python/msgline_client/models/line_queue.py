from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="LineQueue")


@_attrs_define
class LineQueue:
    """What waits for a line.

    Attributes:
        waiting (int):
        next_send_at (datetime.datetime | None | Unset): When the next waiting message is expected to go (`null`: none
            waits, or the line is not
            active).
    """

    waiting: int
    next_send_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        waiting = self.waiting

        next_send_at: None | str | Unset
        if isinstance(self.next_send_at, Unset):
            next_send_at = UNSET
        elif isinstance(self.next_send_at, datetime.datetime):
            next_send_at = self.next_send_at.isoformat()
        else:
            next_send_at = self.next_send_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "waiting": waiting,
            }
        )
        if next_send_at is not UNSET:
            field_dict["next_send_at"] = next_send_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        waiting = d.pop("waiting")

        def _parse_next_send_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_send_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_send_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_send_at = _parse_next_send_at(d.pop("next_send_at", UNSET))

        line_queue = cls(
            waiting=waiting,
            next_send_at=next_send_at,
        )

        line_queue.additional_properties = d
        return line_queue

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
