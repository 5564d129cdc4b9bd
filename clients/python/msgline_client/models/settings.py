from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.reply_defaults import ReplyDefaults


T = TypeVar("T", bound="Settings")


@_attrs_define
class Settings:
    """The automatic replies in force.

    Attributes:
        defaults (ReplyDefaults): Which of the replies are msgline's defaults.
        event_feed (bool): Whether the organisation's events are kept for `GET /feed` and `GET /feed/stream`.
        fallback (str): The SMS fallback of sends that do not say: `sms` or `none`.
        help_reply (str): Sent when a number texts HELP or INFO.
        opt_in_reply (str): Sent when an opted-out number texts START (or a synonym).
        opt_out_reply (str): Sent when a number texts STOP (or a synonym).
    """

    defaults: ReplyDefaults
    event_feed: bool
    fallback: str
    help_reply: str
    opt_in_reply: str
    opt_out_reply: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        defaults = self.defaults.to_dict()

        event_feed = self.event_feed

        fallback = self.fallback

        help_reply = self.help_reply

        opt_in_reply = self.opt_in_reply

        opt_out_reply = self.opt_out_reply

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "defaults": defaults,
                "event_feed": event_feed,
                "fallback": fallback,
                "help_reply": help_reply,
                "opt_in_reply": opt_in_reply,
                "opt_out_reply": opt_out_reply,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.reply_defaults import ReplyDefaults  # noqa: PLC0415

        d = dict(src_dict)
        defaults = ReplyDefaults.from_dict(d.pop("defaults"))

        event_feed = d.pop("event_feed")

        fallback = d.pop("fallback")

        help_reply = d.pop("help_reply")

        opt_in_reply = d.pop("opt_in_reply")

        opt_out_reply = d.pop("opt_out_reply")

        settings = cls(
            defaults=defaults,
            event_feed=event_feed,
            fallback=fallback,
            help_reply=help_reply,
            opt_in_reply=opt_in_reply,
            opt_out_reply=opt_out_reply,
        )

        settings.additional_properties = d
        return settings

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
