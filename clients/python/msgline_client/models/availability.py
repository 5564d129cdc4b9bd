from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Availability")


@_attrs_define
class Availability:
    """Whether a number can be reached from a line.

    Attributes:
        sms (bool): Whether the line sends SMS.
        to (str): E.164.
        checked_at (datetime.datetime | None | Unset): When the iMessage answer was learned (it is remembered for
            `MSGLINE_AVAILABILITY_TTL_SECONDS`); `null` with `imessage: null`.
        imessage (bool | None | Unset): Reachable over iMessage; `null` when the line's device could not be asked.
    """

    sms: bool
    to: str
    checked_at: datetime.datetime | None | Unset = UNSET
    imessage: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        sms = self.sms

        to = self.to

        checked_at: None | str | Unset
        if isinstance(self.checked_at, Unset):
            checked_at = UNSET
        elif isinstance(self.checked_at, datetime.datetime):
            checked_at = self.checked_at.isoformat()
        else:
            checked_at = self.checked_at

        imessage: bool | None | Unset
        if isinstance(self.imessage, Unset):
            imessage = UNSET
        else:
            imessage = self.imessage

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "sms": sms,
                "to": to,
            }
        )
        if checked_at is not UNSET:
            field_dict["checked_at"] = checked_at
        if imessage is not UNSET:
            field_dict["imessage"] = imessage

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        sms = d.pop("sms")

        to = d.pop("to")

        def _parse_checked_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                checked_at_type_0 = datetime.datetime.fromisoformat(data)

                return checked_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        checked_at = _parse_checked_at(d.pop("checked_at", UNSET))

        def _parse_imessage(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        imessage = _parse_imessage(d.pop("imessage", UNSET))

        availability = cls(
            sms=sms,
            to=to,
            checked_at=checked_at,
            imessage=imessage,
        )

        availability.additional_properties = d
        return availability

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
