from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="AgentFields")


@_attrs_define
class AgentFields:
    """An agent's fields: all of them to create one (`name`, `instructions` and, unless the key is
    line-bound, `line_id` required), any of them to change one.

        Example:
            {'instructions': 'You answer questions about opening hours.', 'line_id': 'line_...', 'name': 'Ava'}

        Attributes:
            enabled (bool | None | Unset):
            instructions (None | str | Unset): Its instructions, up to 20,000 characters.
            line_id (None | str | Unset): The line it answers on (one enabled agent per line).
            model (None | str | Unset): The language model; the server's default when omitted.
            name (None | str | Unset): Up to 100 characters; also the name on its contact cards.
            photo_base64 (None | str | Unset): The photo as base64 instead.
            photo_url (None | str | Unset): An `https://` URL of its photo (JPEG, PNG or GIF, at most 200 KB).
            tools (list[str] | None | Unset): Tools it may use: `messaging_send`, `send_contact_card`, `send_poll` (default
                all).
    """

    enabled: bool | None | Unset = UNSET
    instructions: None | str | Unset = UNSET
    line_id: None | str | Unset = UNSET
    model: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    photo_base64: None | str | Unset = UNSET
    photo_url: None | str | Unset = UNSET
    tools: list[str] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        enabled: bool | None | Unset
        if isinstance(self.enabled, Unset):
            enabled = UNSET
        else:
            enabled = self.enabled

        instructions: None | str | Unset
        if isinstance(self.instructions, Unset):
            instructions = UNSET
        else:
            instructions = self.instructions

        line_id: None | str | Unset
        if isinstance(self.line_id, Unset):
            line_id = UNSET
        else:
            line_id = self.line_id

        model: None | str | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        else:
            model = self.model

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        photo_base64: None | str | Unset
        if isinstance(self.photo_base64, Unset):
            photo_base64 = UNSET
        else:
            photo_base64 = self.photo_base64

        photo_url: None | str | Unset
        if isinstance(self.photo_url, Unset):
            photo_url = UNSET
        else:
            photo_url = self.photo_url

        tools: list[str] | None | Unset
        if isinstance(self.tools, Unset):
            tools = UNSET
        elif isinstance(self.tools, list):
            tools = self.tools

        else:
            tools = self.tools

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if enabled is not UNSET:
            field_dict["enabled"] = enabled
        if instructions is not UNSET:
            field_dict["instructions"] = instructions
        if line_id is not UNSET:
            field_dict["line_id"] = line_id
        if model is not UNSET:
            field_dict["model"] = model
        if name is not UNSET:
            field_dict["name"] = name
        if photo_base64 is not UNSET:
            field_dict["photo_base64"] = photo_base64
        if photo_url is not UNSET:
            field_dict["photo_url"] = photo_url
        if tools is not UNSET:
            field_dict["tools"] = tools

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_enabled(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        enabled = _parse_enabled(d.pop("enabled", UNSET))

        def _parse_instructions(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instructions = _parse_instructions(d.pop("instructions", UNSET))

        def _parse_line_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        line_id = _parse_line_id(d.pop("line_id", UNSET))

        def _parse_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model = _parse_model(d.pop("model", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_photo_base64(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        photo_base64 = _parse_photo_base64(d.pop("photo_base64", UNSET))

        def _parse_photo_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        photo_url = _parse_photo_url(d.pop("photo_url", UNSET))

        def _parse_tools(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                tools_type_0 = cast(list[str], data)

                return tools_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        tools = _parse_tools(d.pop("tools", UNSET))

        agent_fields = cls(
            enabled=enabled,
            instructions=instructions,
            line_id=line_id,
            model=model,
            name=name,
            photo_base64=photo_base64,
            photo_url=photo_url,
            tools=tools,
        )

        agent_fields.additional_properties = d
        return agent_fields

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
