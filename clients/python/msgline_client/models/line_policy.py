from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="LinePolicy")


@_attrs_define
class LinePolicy:
    """A line's sending policy: each a limit, or `null` for none.

    Attributes:
        jitter_ms (int | None | Unset):
        max_new_contacts_per_day (int | None | Unset):
        max_new_contacts_per_hour (int | None | Unset):
        max_new_contacts_per_month (int | None | Unset): The calendar month, UTC.
        max_per_day (int | None | Unset):
        max_per_hour (int | None | Unset):
        max_per_minute (int | None | Unset):
        max_per_recipient_per_minute (int | None | Unset):
        min_gap_ms (int | None | Unset):
    """

    jitter_ms: int | None | Unset = UNSET
    max_new_contacts_per_day: int | None | Unset = UNSET
    max_new_contacts_per_hour: int | None | Unset = UNSET
    max_new_contacts_per_month: int | None | Unset = UNSET
    max_per_day: int | None | Unset = UNSET
    max_per_hour: int | None | Unset = UNSET
    max_per_minute: int | None | Unset = UNSET
    max_per_recipient_per_minute: int | None | Unset = UNSET
    min_gap_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        jitter_ms: int | None | Unset
        if isinstance(self.jitter_ms, Unset):
            jitter_ms = UNSET
        else:
            jitter_ms = self.jitter_ms

        max_new_contacts_per_day: int | None | Unset
        if isinstance(self.max_new_contacts_per_day, Unset):
            max_new_contacts_per_day = UNSET
        else:
            max_new_contacts_per_day = self.max_new_contacts_per_day

        max_new_contacts_per_hour: int | None | Unset
        if isinstance(self.max_new_contacts_per_hour, Unset):
            max_new_contacts_per_hour = UNSET
        else:
            max_new_contacts_per_hour = self.max_new_contacts_per_hour

        max_new_contacts_per_month: int | None | Unset
        if isinstance(self.max_new_contacts_per_month, Unset):
            max_new_contacts_per_month = UNSET
        else:
            max_new_contacts_per_month = self.max_new_contacts_per_month

        max_per_day: int | None | Unset
        if isinstance(self.max_per_day, Unset):
            max_per_day = UNSET
        else:
            max_per_day = self.max_per_day

        max_per_hour: int | None | Unset
        if isinstance(self.max_per_hour, Unset):
            max_per_hour = UNSET
        else:
            max_per_hour = self.max_per_hour

        max_per_minute: int | None | Unset
        if isinstance(self.max_per_minute, Unset):
            max_per_minute = UNSET
        else:
            max_per_minute = self.max_per_minute

        max_per_recipient_per_minute: int | None | Unset
        if isinstance(self.max_per_recipient_per_minute, Unset):
            max_per_recipient_per_minute = UNSET
        else:
            max_per_recipient_per_minute = self.max_per_recipient_per_minute

        min_gap_ms: int | None | Unset
        if isinstance(self.min_gap_ms, Unset):
            min_gap_ms = UNSET
        else:
            min_gap_ms = self.min_gap_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if jitter_ms is not UNSET:
            field_dict["jitter_ms"] = jitter_ms
        if max_new_contacts_per_day is not UNSET:
            field_dict["max_new_contacts_per_day"] = max_new_contacts_per_day
        if max_new_contacts_per_hour is not UNSET:
            field_dict["max_new_contacts_per_hour"] = max_new_contacts_per_hour
        if max_new_contacts_per_month is not UNSET:
            field_dict["max_new_contacts_per_month"] = max_new_contacts_per_month
        if max_per_day is not UNSET:
            field_dict["max_per_day"] = max_per_day
        if max_per_hour is not UNSET:
            field_dict["max_per_hour"] = max_per_hour
        if max_per_minute is not UNSET:
            field_dict["max_per_minute"] = max_per_minute
        if max_per_recipient_per_minute is not UNSET:
            field_dict["max_per_recipient_per_minute"] = max_per_recipient_per_minute
        if min_gap_ms is not UNSET:
            field_dict["min_gap_ms"] = min_gap_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_jitter_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        jitter_ms = _parse_jitter_ms(d.pop("jitter_ms", UNSET))

        def _parse_max_new_contacts_per_day(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_new_contacts_per_day = _parse_max_new_contacts_per_day(d.pop("max_new_contacts_per_day", UNSET))

        def _parse_max_new_contacts_per_hour(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_new_contacts_per_hour = _parse_max_new_contacts_per_hour(d.pop("max_new_contacts_per_hour", UNSET))

        def _parse_max_new_contacts_per_month(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_new_contacts_per_month = _parse_max_new_contacts_per_month(d.pop("max_new_contacts_per_month", UNSET))

        def _parse_max_per_day(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_per_day = _parse_max_per_day(d.pop("max_per_day", UNSET))

        def _parse_max_per_hour(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_per_hour = _parse_max_per_hour(d.pop("max_per_hour", UNSET))

        def _parse_max_per_minute(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_per_minute = _parse_max_per_minute(d.pop("max_per_minute", UNSET))

        def _parse_max_per_recipient_per_minute(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_per_recipient_per_minute = _parse_max_per_recipient_per_minute(d.pop("max_per_recipient_per_minute", UNSET))

        def _parse_min_gap_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        min_gap_ms = _parse_min_gap_ms(d.pop("min_gap_ms", UNSET))

        line_policy = cls(
            jitter_ms=jitter_ms,
            max_new_contacts_per_day=max_new_contacts_per_day,
            max_new_contacts_per_hour=max_new_contacts_per_hour,
            max_new_contacts_per_month=max_new_contacts_per_month,
            max_per_day=max_per_day,
            max_per_hour=max_per_hour,
            max_per_minute=max_per_minute,
            max_per_recipient_per_minute=max_per_recipient_per_minute,
            min_gap_ms=min_gap_ms,
        )

        line_policy.additional_properties = d
        return line_policy

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
