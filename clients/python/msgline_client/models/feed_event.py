from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.feed_event_data import FeedEventData


T = TypeVar("T", bound="FeedEvent")


@_attrs_define
class FeedEvent:
    """An event, as webhooks and the feed give it.

    Attributes:
        created_at (datetime.datetime):
        data (FeedEventData): What the event is about (a message's events: the message).
        id (str): `evt_…`
        type_ (str): Such as `messaging.message.delivered`.
    """

    created_at: datetime.datetime
    data: FeedEventData
    id: str
    type_: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        data = self.data.to_dict()

        id = self.id

        type_ = self.type_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "data": data,
                "id": id,
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.feed_event_data import FeedEventData  # noqa: PLC0415

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        data = FeedEventData.from_dict(d.pop("data"))

        id = d.pop("id")

        type_ = d.pop("type")

        feed_event = cls(
            created_at=created_at,
            data=data,
            id=id,
            type_=type_,
        )

        feed_event.additional_properties = d
        return feed_event

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
