from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ListDeliveryAttemptDataItem")


@_attrs_define
class ListDeliveryAttemptDataItem:
    """A delivery attempt of an outbound message to its line.

    Attributes:
        attempt (int):
        created_at (datetime.datetime):
        id (str): `att_…`
        latency_ms (int):
        line_id (str):
        message_id (str):
        outcome (str): `accepted`, `rejected`, `timeout` or `error`.
        error (None | str | Unset):
        http_status (int | None | Unset):
    """

    attempt: int
    created_at: datetime.datetime
    id: str
    latency_ms: int
    line_id: str
    message_id: str
    outcome: str
    error: None | str | Unset = UNSET
    http_status: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        created_at = self.created_at.isoformat()

        id = self.id

        latency_ms = self.latency_ms

        line_id = self.line_id

        message_id = self.message_id

        outcome = self.outcome

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        http_status: int | None | Unset
        if isinstance(self.http_status, Unset):
            http_status = UNSET
        else:
            http_status = self.http_status

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "created_at": created_at,
                "id": id,
                "latency_ms": latency_ms,
                "line_id": line_id,
                "message_id": message_id,
                "outcome": outcome,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if http_status is not UNSET:
            field_dict["http_status"] = http_status

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        latency_ms = d.pop("latency_ms")

        line_id = d.pop("line_id")

        message_id = d.pop("message_id")

        outcome = d.pop("outcome")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_http_status(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        http_status = _parse_http_status(d.pop("http_status", UNSET))

        list_delivery_attempt_data_item = cls(
            attempt=attempt,
            created_at=created_at,
            id=id,
            latency_ms=latency_ms,
            line_id=line_id,
            message_id=message_id,
            outcome=outcome,
            error=error,
            http_status=http_status,
        )

        list_delivery_attempt_data_item.additional_properties = d
        return list_delivery_attempt_data_item

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
