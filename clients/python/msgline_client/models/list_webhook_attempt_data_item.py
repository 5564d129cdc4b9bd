from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ListWebhookAttemptDataItem")


@_attrs_define
class ListWebhookAttemptDataItem:
    """One attempt to deliver an event to a webhook endpoint.

    Attributes:
        attempt (int):
        created_at (datetime.datetime):
        event_id (str):
        event_type (str):
        id (str):
        latency_ms (int):
        succeeded (bool):
        webhook_id (str):
        error (None | str | Unset):
        next_attempt_at (datetime.datetime | None | Unset):
        response_body (None | str | Unset):
        status_code (int | None | Unset):
    """

    attempt: int
    created_at: datetime.datetime
    event_id: str
    event_type: str
    id: str
    latency_ms: int
    succeeded: bool
    webhook_id: str
    error: None | str | Unset = UNSET
    next_attempt_at: datetime.datetime | None | Unset = UNSET
    response_body: None | str | Unset = UNSET
    status_code: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        created_at = self.created_at.isoformat()

        event_id = self.event_id

        event_type = self.event_type

        id = self.id

        latency_ms = self.latency_ms

        succeeded = self.succeeded

        webhook_id = self.webhook_id

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        next_attempt_at: None | str | Unset
        if isinstance(self.next_attempt_at, Unset):
            next_attempt_at = UNSET
        elif isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

        response_body: None | str | Unset
        if isinstance(self.response_body, Unset):
            response_body = UNSET
        else:
            response_body = self.response_body

        status_code: int | None | Unset
        if isinstance(self.status_code, Unset):
            status_code = UNSET
        else:
            status_code = self.status_code

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "created_at": created_at,
                "event_id": event_id,
                "event_type": event_type,
                "id": id,
                "latency_ms": latency_ms,
                "succeeded": succeeded,
                "webhook_id": webhook_id,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if next_attempt_at is not UNSET:
            field_dict["next_attempt_at"] = next_attempt_at
        if response_body is not UNSET:
            field_dict["response_body"] = response_body
        if status_code is not UNSET:
            field_dict["status_code"] = status_code

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        event_id = d.pop("event_id")

        event_type = d.pop("event_type")

        id = d.pop("id")

        latency_ms = d.pop("latency_ms")

        succeeded = d.pop("succeeded")

        webhook_id = d.pop("webhook_id")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_next_attempt_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_attempt_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_attempt_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at", UNSET))

        def _parse_response_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        response_body = _parse_response_body(d.pop("response_body", UNSET))

        def _parse_status_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        status_code = _parse_status_code(d.pop("status_code", UNSET))

        list_webhook_attempt_data_item = cls(
            attempt=attempt,
            created_at=created_at,
            event_id=event_id,
            event_type=event_type,
            id=id,
            latency_ms=latency_ms,
            succeeded=succeeded,
            webhook_id=webhook_id,
            error=error,
            next_attempt_at=next_attempt_at,
            response_body=response_body,
            status_code=status_code,
        )

        list_webhook_attempt_data_item.additional_properties = d
        return list_webhook_attempt_data_item

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
