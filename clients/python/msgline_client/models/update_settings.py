from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="UpdateSettings")


@_attrs_define
class UpdateSettings:
    """`PATCH /settings`: an omitted reply is left as it is, `""` goes back to the default; at least
    one must be given (so that a misspelt name is an error, not a change of nothing).

        Example:
            {'opt_out_reply': 'Acme: you will get no more texts. Reply START to come back.'}

        Attributes:
            event_feed (bool | None | Unset): Whether the organisation's events are kept for `GET /feed` and `GET
                /feed/stream`
                (`false`, the default: only webhooks get them). Example: True.
            fallback (None | str | Unset): The SMS fallback of sends that do not say (`fallback` on `POST /messages`): `sms`
                or
                `none` (the default). Example: sms.
            help_reply (None | str | Unset): Sent when a number texts HELP or INFO.
            opt_in_reply (None | str | Unset): Sent when an opted-out number texts START (or a synonym).
            opt_out_reply (None | str | Unset): Sent when a number texts STOP (or a synonym).
    """

    event_feed: bool | None | Unset = UNSET
    fallback: None | str | Unset = UNSET
    help_reply: None | str | Unset = UNSET
    opt_in_reply: None | str | Unset = UNSET
    opt_out_reply: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        event_feed: bool | None | Unset
        if isinstance(self.event_feed, Unset):
            event_feed = UNSET
        else:
            event_feed = self.event_feed

        fallback: None | str | Unset
        if isinstance(self.fallback, Unset):
            fallback = UNSET
        else:
            fallback = self.fallback

        help_reply: None | str | Unset
        if isinstance(self.help_reply, Unset):
            help_reply = UNSET
        else:
            help_reply = self.help_reply

        opt_in_reply: None | str | Unset
        if isinstance(self.opt_in_reply, Unset):
            opt_in_reply = UNSET
        else:
            opt_in_reply = self.opt_in_reply

        opt_out_reply: None | str | Unset
        if isinstance(self.opt_out_reply, Unset):
            opt_out_reply = UNSET
        else:
            opt_out_reply = self.opt_out_reply

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if event_feed is not UNSET:
            field_dict["event_feed"] = event_feed
        if fallback is not UNSET:
            field_dict["fallback"] = fallback
        if help_reply is not UNSET:
            field_dict["help_reply"] = help_reply
        if opt_in_reply is not UNSET:
            field_dict["opt_in_reply"] = opt_in_reply
        if opt_out_reply is not UNSET:
            field_dict["opt_out_reply"] = opt_out_reply

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_event_feed(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        event_feed = _parse_event_feed(d.pop("event_feed", UNSET))

        def _parse_fallback(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        fallback = _parse_fallback(d.pop("fallback", UNSET))

        def _parse_help_reply(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        help_reply = _parse_help_reply(d.pop("help_reply", UNSET))

        def _parse_opt_in_reply(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        opt_in_reply = _parse_opt_in_reply(d.pop("opt_in_reply", UNSET))

        def _parse_opt_out_reply(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        opt_out_reply = _parse_opt_out_reply(d.pop("opt_out_reply", UNSET))

        update_settings = cls(
            event_feed=event_feed,
            fallback=fallback,
            help_reply=help_reply,
            opt_in_reply=opt_in_reply,
            opt_out_reply=opt_out_reply,
        )

        update_settings.additional_properties = d
        return update_settings

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
