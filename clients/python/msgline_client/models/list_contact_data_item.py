from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ListContactDataItem")


@_attrs_define
class ListContactDataItem:
    """
    Attributes:
        created_at (datetime.datetime):
        id (str): `ct_…`
        phone (str):
        updated_at (datetime.datetime):
        email (None | str | Unset):
        imessage_reachable (bool | None | Unset): Whether the number was last seen reachable over iMessage; `null` until
            a line is asked.
        name (None | str | Unset):
        note (None | str | Unset):
        opted_out_at (datetime.datetime | None | Unset): When the number opted out (texted STOP) of the organisation's
            messages on one of its
            lines: the earliest opt-out still in force; `null` when there is none.
        organization (None | str | Unset):
    """

    created_at: datetime.datetime
    id: str
    phone: str
    updated_at: datetime.datetime
    email: None | str | Unset = UNSET
    imessage_reachable: bool | None | Unset = UNSET
    name: None | str | Unset = UNSET
    note: None | str | Unset = UNSET
    opted_out_at: datetime.datetime | None | Unset = UNSET
    organization: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = self.id

        phone = self.phone

        updated_at = self.updated_at.isoformat()

        email: None | str | Unset
        if isinstance(self.email, Unset):
            email = UNSET
        else:
            email = self.email

        imessage_reachable: bool | None | Unset
        if isinstance(self.imessage_reachable, Unset):
            imessage_reachable = UNSET
        else:
            imessage_reachable = self.imessage_reachable

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        note: None | str | Unset
        if isinstance(self.note, Unset):
            note = UNSET
        else:
            note = self.note

        opted_out_at: None | str | Unset
        if isinstance(self.opted_out_at, Unset):
            opted_out_at = UNSET
        elif isinstance(self.opted_out_at, datetime.datetime):
            opted_out_at = self.opted_out_at.isoformat()
        else:
            opted_out_at = self.opted_out_at

        organization: None | str | Unset
        if isinstance(self.organization, Unset):
            organization = UNSET
        else:
            organization = self.organization

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "phone": phone,
                "updated_at": updated_at,
            }
        )
        if email is not UNSET:
            field_dict["email"] = email
        if imessage_reachable is not UNSET:
            field_dict["imessage_reachable"] = imessage_reachable
        if name is not UNSET:
            field_dict["name"] = name
        if note is not UNSET:
            field_dict["note"] = note
        if opted_out_at is not UNSET:
            field_dict["opted_out_at"] = opted_out_at
        if organization is not UNSET:
            field_dict["organization"] = organization

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        phone = d.pop("phone")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_email(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        email = _parse_email(d.pop("email", UNSET))

        def _parse_imessage_reachable(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        imessage_reachable = _parse_imessage_reachable(d.pop("imessage_reachable", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_note(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        note = _parse_note(d.pop("note", UNSET))

        def _parse_opted_out_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                opted_out_at_type_0 = datetime.datetime.fromisoformat(data)

                return opted_out_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        opted_out_at = _parse_opted_out_at(d.pop("opted_out_at", UNSET))

        def _parse_organization(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        organization = _parse_organization(d.pop("organization", UNSET))

        list_contact_data_item = cls(
            created_at=created_at,
            id=id,
            phone=phone,
            updated_at=updated_at,
            email=email,
            imessage_reachable=imessage_reachable,
            name=name,
            note=note,
            opted_out_at=opted_out_at,
            organization=organization,
        )

        list_contact_data_item.additional_properties = d
        return list_contact_data_item

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
