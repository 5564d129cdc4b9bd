from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="MessageAction")


@_attrs_define
class MessageAction:
    """An edit or unsend msgline asked a line for.

    Attributes:
        id (str): `mac_…`
        kind (str): `edit` or `unsend`.
        requested_at (datetime.datetime):
        status (str): `pending`, `unknown` or `failed`.
        body (None | str | Unset): The new text of an edit.
        error (None | str | Unset): Why it failed, or what is known of an uncertain one.
    """

    id: str
    kind: str
    requested_at: datetime.datetime
    status: str
    body: None | str | Unset = UNSET
    error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        kind = self.kind

        requested_at = self.requested_at.isoformat()

        status = self.status

        body: None | str | Unset
        if isinstance(self.body, Unset):
            body = UNSET
        else:
            body = self.body

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "kind": kind,
                "requested_at": requested_at,
                "status": status,
            }
        )
        if body is not UNSET:
            field_dict["body"] = body
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        kind = d.pop("kind")

        requested_at = datetime.datetime.fromisoformat(d.pop("requested_at"))

        status = d.pop("status")

        def _parse_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        body = _parse_body(d.pop("body", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        message_action = cls(
            id=id,
            kind=kind,
            requested_at=requested_at,
            status=status,
            body=body,
            error=error,
        )

        message_action.additional_properties = d
        return message_action

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
