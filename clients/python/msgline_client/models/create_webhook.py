from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="CreateWebhook")


@_attrs_define
class CreateWebhook:
    """`POST /webhooks`.

    Example:
        {'events': ['messaging.message.delivered', 'messaging.message.received'], 'url':
            'https://example.com/hooks/msgline'}

    Attributes:
        events (list[str]): Event types (`messaging.message.delivered`), or `*` for all.
        url (str): Where events are posted: `https://` (or `http://`), never a private address; up to 2,048
            characters.
        description (None | str | Unset):
        line_id (None | str | Unset): Only this line's events (a line-bound caller's endpoints are bound to its line).
    """

    events: list[str]
    url: str
    description: None | str | Unset = UNSET
    line_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        events = self.events

        url = self.url

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        line_id: None | str | Unset
        if isinstance(self.line_id, Unset):
            line_id = UNSET
        else:
            line_id = self.line_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "events": events,
                "url": url,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description
        if line_id is not UNSET:
            field_dict["line_id"] = line_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        events = cast(list[str], d.pop("events"))

        url = d.pop("url")

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_line_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        line_id = _parse_line_id(d.pop("line_id", UNSET))

        create_webhook = cls(
            events=events,
            url=url,
            description=description,
            line_id=line_id,
        )

        create_webhook.additional_properties = d
        return create_webhook

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
