from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Agent")


@_attrs_define
class Agent:
    """A hosted agent.

    Attributes:
        created_at (datetime.datetime):
        enabled (bool):
        has_photo (bool):
        id (str): `agt_…`
        instructions (str):
        line_id (str):
        name (str):
        tools (list[str]):
        updated_at (datetime.datetime):
        model (None | str | Unset):
        photo_url (None | str | Unset):
    """

    created_at: datetime.datetime
    enabled: bool
    has_photo: bool
    id: str
    instructions: str
    line_id: str
    name: str
    tools: list[str]
    updated_at: datetime.datetime
    model: None | str | Unset = UNSET
    photo_url: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        enabled = self.enabled

        has_photo = self.has_photo

        id = self.id

        instructions = self.instructions

        line_id = self.line_id

        name = self.name

        tools = self.tools

        updated_at = self.updated_at.isoformat()

        model: None | str | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        else:
            model = self.model

        photo_url: None | str | Unset
        if isinstance(self.photo_url, Unset):
            photo_url = UNSET
        else:
            photo_url = self.photo_url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "enabled": enabled,
                "has_photo": has_photo,
                "id": id,
                "instructions": instructions,
                "line_id": line_id,
                "name": name,
                "tools": tools,
                "updated_at": updated_at,
            }
        )
        if model is not UNSET:
            field_dict["model"] = model
        if photo_url is not UNSET:
            field_dict["photo_url"] = photo_url

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        enabled = d.pop("enabled")

        has_photo = d.pop("has_photo")

        id = d.pop("id")

        instructions = d.pop("instructions")

        line_id = d.pop("line_id")

        name = d.pop("name")

        tools = cast(list[str], d.pop("tools"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model = _parse_model(d.pop("model", UNSET))

        def _parse_photo_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        photo_url = _parse_photo_url(d.pop("photo_url", UNSET))

        agent = cls(
            created_at=created_at,
            enabled=enabled,
            has_photo=has_photo,
            id=id,
            instructions=instructions,
            line_id=line_id,
            name=name,
            tools=tools,
            updated_at=updated_at,
            model=model,
            photo_url=photo_url,
        )

        agent.additional_properties = d
        return agent

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
