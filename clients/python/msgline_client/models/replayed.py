from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Replayed")


@_attrs_define
class Replayed:
    """What a replay queued.

    Attributes:
        enabled (bool):
        queued (int):
        since (datetime.datetime):
        webhook_id (str):
    """

    enabled: bool
    queued: int
    since: datetime.datetime
    webhook_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        enabled = self.enabled

        queued = self.queued

        since = self.since.isoformat()

        webhook_id = self.webhook_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "enabled": enabled,
                "queued": queued,
                "since": since,
                "webhook_id": webhook_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        enabled = d.pop("enabled")

        queued = d.pop("queued")

        since = datetime.datetime.fromisoformat(d.pop("since"))

        webhook_id = d.pop("webhook_id")

        replayed = cls(
            enabled=enabled,
            queued=queued,
            since=since,
            webhook_id=webhook_id,
        )

        replayed.additional_properties = d
        return replayed

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
