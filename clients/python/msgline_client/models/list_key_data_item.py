from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ListKeyDataItem")


@_attrs_define
class ListKeyDataItem:
    """An API key; `key`, the secret, only in the answer that created it.

    Attributes:
        created_at (datetime.datetime):
        id (str): `key_…`
        key_hint (str): The secret's last characters.
        name (str):
        scopes (list[str]):
        expires_at (datetime.datetime | None | Unset):
        key (str | Unset): The secret (`mlk_…`): shown once, at creation or rotation.
        line_id (None | str | Unset):
        previous_key_expires_at (datetime.datetime | Unset):
        previous_key_id (str | Unset): After a rotation: the key this one replaces, and when it stops working.
        revoked_at (datetime.datetime | None | Unset):
    """

    created_at: datetime.datetime
    id: str
    key_hint: str
    name: str
    scopes: list[str]
    expires_at: datetime.datetime | None | Unset = UNSET
    key: str | Unset = UNSET
    line_id: None | str | Unset = UNSET
    previous_key_expires_at: datetime.datetime | Unset = UNSET
    previous_key_id: str | Unset = UNSET
    revoked_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = self.id

        key_hint = self.key_hint

        name = self.name

        scopes = self.scopes

        expires_at: None | str | Unset
        if isinstance(self.expires_at, Unset):
            expires_at = UNSET
        elif isinstance(self.expires_at, datetime.datetime):
            expires_at = self.expires_at.isoformat()
        else:
            expires_at = self.expires_at

        key = self.key

        line_id: None | str | Unset
        if isinstance(self.line_id, Unset):
            line_id = UNSET
        else:
            line_id = self.line_id

        previous_key_expires_at: str | Unset = UNSET
        if not isinstance(self.previous_key_expires_at, Unset):
            previous_key_expires_at = self.previous_key_expires_at.isoformat()

        previous_key_id = self.previous_key_id

        revoked_at: None | str | Unset
        if isinstance(self.revoked_at, Unset):
            revoked_at = UNSET
        elif isinstance(self.revoked_at, datetime.datetime):
            revoked_at = self.revoked_at.isoformat()
        else:
            revoked_at = self.revoked_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "key_hint": key_hint,
                "name": name,
                "scopes": scopes,
            }
        )
        if expires_at is not UNSET:
            field_dict["expires_at"] = expires_at
        if key is not UNSET:
            field_dict["key"] = key
        if line_id is not UNSET:
            field_dict["line_id"] = line_id
        if previous_key_expires_at is not UNSET:
            field_dict["previous_key_expires_at"] = previous_key_expires_at
        if previous_key_id is not UNSET:
            field_dict["previous_key_id"] = previous_key_id
        if revoked_at is not UNSET:
            field_dict["revoked_at"] = revoked_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        key_hint = d.pop("key_hint")

        name = d.pop("name")

        scopes = cast(list[str], d.pop("scopes"))

        def _parse_expires_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                expires_at_type_0 = datetime.datetime.fromisoformat(data)

                return expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        expires_at = _parse_expires_at(d.pop("expires_at", UNSET))

        key = d.pop("key", UNSET)

        def _parse_line_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        line_id = _parse_line_id(d.pop("line_id", UNSET))

        _previous_key_expires_at = d.pop("previous_key_expires_at", UNSET)
        previous_key_expires_at: datetime.datetime | Unset
        if isinstance(_previous_key_expires_at, Unset):
            previous_key_expires_at = UNSET
        else:
            previous_key_expires_at = datetime.datetime.fromisoformat(_previous_key_expires_at)

        previous_key_id = d.pop("previous_key_id", UNSET)

        def _parse_revoked_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                revoked_at_type_0 = datetime.datetime.fromisoformat(data)

                return revoked_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        revoked_at = _parse_revoked_at(d.pop("revoked_at", UNSET))

        list_key_data_item = cls(
            created_at=created_at,
            id=id,
            key_hint=key_hint,
            name=name,
            scopes=scopes,
            expires_at=expires_at,
            key=key,
            line_id=line_id,
            previous_key_expires_at=previous_key_expires_at,
            previous_key_id=previous_key_id,
            revoked_at=revoked_at,
        )

        list_key_data_item.additional_properties = d
        return list_key_data_item

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
