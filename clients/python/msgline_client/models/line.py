from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.capabilities import Capabilities
    from ..models.line_policy import LinePolicy
    from ..models.line_queue import LineQueue
    from ..models.line_usage import LineUsage


T = TypeVar("T", bound="Line")


@_attrs_define
class Line:
    """A phone line the caller may send from; never its bridge address or credentials.

    Attributes:
        bridge_kind (str): `msgline`, `bluebubbles` or `android-gateway`.
        created_at (datetime.datetime):
        dial_in (bool): An Android phone that calls msgline (`--dial-in`) rather than one msgline calls.
        e164 (str):
        health (str): `active`, `paused`, `flagged` or `offline`.
        id (str): `line_…`
        kind (str): `dedicated` or `shared`.
        policy (LinePolicy): A line's sending policy: each a limit, or `null` for none.
        queue (LineQueue): What waits for a line.
        status (str): `unknown` until the bridge has been reached, then `online` or `offline`.
        usage (LineUsage): A line's sends in its budget's windows (the last minute, hour and 24 hours; the month is the
            calendar month, UTC).
        capabilities (Capabilities | None | Unset):
        checked_at (datetime.datetime | None | Unset):
        device_last_seen_at (datetime.datetime | None | Unset): A dial-in line's phone: when it last called msgline
            (`null`: never, or not dial-in).
        health_reason (None | str | Unset): Why the line is not active (`null` when it is).
    """

    bridge_kind: str
    created_at: datetime.datetime
    dial_in: bool
    e164: str
    health: str
    id: str
    kind: str
    policy: LinePolicy
    queue: LineQueue
    status: str
    usage: LineUsage
    capabilities: Capabilities | None | Unset = UNSET
    checked_at: datetime.datetime | None | Unset = UNSET
    device_last_seen_at: datetime.datetime | None | Unset = UNSET
    health_reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.capabilities import Capabilities  # noqa: PLC0415

        bridge_kind = self.bridge_kind

        created_at = self.created_at.isoformat()

        dial_in = self.dial_in

        e164 = self.e164

        health = self.health

        id = self.id

        kind = self.kind

        policy = self.policy.to_dict()

        queue = self.queue.to_dict()

        status = self.status

        usage = self.usage.to_dict()

        capabilities: dict[str, Any] | None | Unset
        if isinstance(self.capabilities, Unset):
            capabilities = UNSET
        elif isinstance(self.capabilities, Capabilities):
            capabilities = self.capabilities.to_dict()
        else:
            capabilities = self.capabilities

        checked_at: None | str | Unset
        if isinstance(self.checked_at, Unset):
            checked_at = UNSET
        elif isinstance(self.checked_at, datetime.datetime):
            checked_at = self.checked_at.isoformat()
        else:
            checked_at = self.checked_at

        device_last_seen_at: None | str | Unset
        if isinstance(self.device_last_seen_at, Unset):
            device_last_seen_at = UNSET
        elif isinstance(self.device_last_seen_at, datetime.datetime):
            device_last_seen_at = self.device_last_seen_at.isoformat()
        else:
            device_last_seen_at = self.device_last_seen_at

        health_reason: None | str | Unset
        if isinstance(self.health_reason, Unset):
            health_reason = UNSET
        else:
            health_reason = self.health_reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "bridge_kind": bridge_kind,
                "created_at": created_at,
                "dial_in": dial_in,
                "e164": e164,
                "health": health,
                "id": id,
                "kind": kind,
                "policy": policy,
                "queue": queue,
                "status": status,
                "usage": usage,
            }
        )
        if capabilities is not UNSET:
            field_dict["capabilities"] = capabilities
        if checked_at is not UNSET:
            field_dict["checked_at"] = checked_at
        if device_last_seen_at is not UNSET:
            field_dict["device_last_seen_at"] = device_last_seen_at
        if health_reason is not UNSET:
            field_dict["health_reason"] = health_reason

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.capabilities import Capabilities  # noqa: PLC0415
        from ..models.line_policy import LinePolicy  # noqa: PLC0415
        from ..models.line_queue import LineQueue  # noqa: PLC0415
        from ..models.line_usage import LineUsage  # noqa: PLC0415

        d = dict(src_dict)
        bridge_kind = d.pop("bridge_kind")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        dial_in = d.pop("dial_in")

        e164 = d.pop("e164")

        health = d.pop("health")

        id = d.pop("id")

        kind = d.pop("kind")

        policy = LinePolicy.from_dict(d.pop("policy"))

        queue = LineQueue.from_dict(d.pop("queue"))

        status = d.pop("status")

        usage = LineUsage.from_dict(d.pop("usage"))

        def _parse_capabilities(data: object) -> Capabilities | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                capabilities_type_1 = Capabilities.from_dict(data)

                return capabilities_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Capabilities | None | Unset, data)

        capabilities = _parse_capabilities(d.pop("capabilities", UNSET))

        def _parse_checked_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                checked_at_type_0 = datetime.datetime.fromisoformat(data)

                return checked_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        checked_at = _parse_checked_at(d.pop("checked_at", UNSET))

        def _parse_device_last_seen_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                device_last_seen_at_type_0 = datetime.datetime.fromisoformat(data)

                return device_last_seen_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        device_last_seen_at = _parse_device_last_seen_at(d.pop("device_last_seen_at", UNSET))

        def _parse_health_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        health_reason = _parse_health_reason(d.pop("health_reason", UNSET))

        line = cls(
            bridge_kind=bridge_kind,
            created_at=created_at,
            dial_in=dial_in,
            e164=e164,
            health=health,
            id=id,
            kind=kind,
            policy=policy,
            queue=queue,
            status=status,
            usage=usage,
            capabilities=capabilities,
            checked_at=checked_at,
            device_last_seen_at=device_last_seen_at,
            health_reason=health_reason,
        )

        line.additional_properties = d
        return line

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
