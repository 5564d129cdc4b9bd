from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="LineUsage")


@_attrs_define
class LineUsage:
    """A line's sends in its budget's windows (the last minute, hour and 24 hours; the month is the
    calendar month, UTC).

        Attributes:
            day (int):
            hour (int):
            minute (int):
            new_contacts_day (int):
            new_contacts_hour (int):
            new_contacts_month (int):
    """

    day: int
    hour: int
    minute: int
    new_contacts_day: int
    new_contacts_hour: int
    new_contacts_month: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        day = self.day

        hour = self.hour

        minute = self.minute

        new_contacts_day = self.new_contacts_day

        new_contacts_hour = self.new_contacts_hour

        new_contacts_month = self.new_contacts_month

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "day": day,
                "hour": hour,
                "minute": minute,
                "new_contacts_day": new_contacts_day,
                "new_contacts_hour": new_contacts_hour,
                "new_contacts_month": new_contacts_month,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        day = d.pop("day")

        hour = d.pop("hour")

        minute = d.pop("minute")

        new_contacts_day = d.pop("new_contacts_day")

        new_contacts_hour = d.pop("new_contacts_hour")

        new_contacts_month = d.pop("new_contacts_month")

        line_usage = cls(
            day=day,
            hour=hour,
            minute=minute,
            new_contacts_day=new_contacts_day,
            new_contacts_hour=new_contacts_hour,
            new_contacts_month=new_contacts_month,
        )

        line_usage.additional_properties = d
        return line_usage

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
