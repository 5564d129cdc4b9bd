from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.channel import Channel
from ..types import UNSET, Unset

T = TypeVar("T", bound="SendPoll")


@_attrs_define
class SendPoll:
    """`POST /polls`: a native iMessage poll.

    Example:
        {'options': ['Pizza', 'Tacos', 'Sushi'], 'question': 'Lunch?', 'to': '+12015550123'}

    Attributes:
        options (list[str] | None): 2 to 12 options, each 1 to 80 characters, distinct ignoring case.
        question (None | str): 1 to 200 characters.
        channel (Channel | None | Unset):
        contact_id (None | str | Unset): An existing contact.
        conversation_id (None | str | Unset): An existing conversation (a direct thread, or a group).
        default_country (None | str | Unset): ISO 3166 code (`US`), only for a national-format number.
        from_ (None | str | Unset): The line to send from, by its number.
        line_e164 (None | str | Unset): The same as `from`.
        line_id (None | str | Unset): The line to send from; else the key's line, else the organisation's only line.
        pool_id (None | str | Unset): A sender pool of the organisation's lines, instead of a line: the contact's line
            in the
            pool (its latest conversation's), else the pool line with the most of today's budget left.
        reply_to (None | str | Unset): A message of the same conversation (`msg_…`) that this one answers: an inline
            reply over
            iMessage; over SMS the message goes as a plain one. Another conversation's: 400. Example:
            msg_01HZX3K9J8Q2W5E7R4T6Y8U0IP.
        send_at (datetime.datetime | None | Unset): Send later: an RFC 3339 time at least `MSGLINE_SCHEDULE_MIN_SECONDS`
            (60) and at most 90
            days ahead. The message is `scheduled` until then, and can be canceled.
        to (None | str | Unset): The recipient, E.164 (`+12015550123`); a national number needs `default_country`.
        validity_seconds (int | None | Unset): How long the message may wait for its line (its budget, a pause, an
            offline device), in
            seconds from when it is due: 5 to 259,200 (3 days), default 36,000 (10 hours). A message
            still waiting then is `failed` with error `expired` and never sent.
    """

    options: list[str] | None
    question: None | str
    channel: Channel | None | Unset = UNSET
    contact_id: None | str | Unset = UNSET
    conversation_id: None | str | Unset = UNSET
    default_country: None | str | Unset = UNSET
    from_: None | str | Unset = UNSET
    line_e164: None | str | Unset = UNSET
    line_id: None | str | Unset = UNSET
    pool_id: None | str | Unset = UNSET
    reply_to: None | str | Unset = UNSET
    send_at: datetime.datetime | None | Unset = UNSET
    to: None | str | Unset = UNSET
    validity_seconds: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        options: list[str] | None
        if isinstance(self.options, list):
            options = self.options

        else:
            options = self.options

        question: None | str
        question = self.question

        channel: None | str | Unset
        if isinstance(self.channel, Unset):
            channel = UNSET
        elif isinstance(self.channel, Channel):
            channel = self.channel.value
        else:
            channel = self.channel

        contact_id: None | str | Unset
        if isinstance(self.contact_id, Unset):
            contact_id = UNSET
        else:
            contact_id = self.contact_id

        conversation_id: None | str | Unset
        if isinstance(self.conversation_id, Unset):
            conversation_id = UNSET
        else:
            conversation_id = self.conversation_id

        default_country: None | str | Unset
        if isinstance(self.default_country, Unset):
            default_country = UNSET
        else:
            default_country = self.default_country

        from_: None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        else:
            from_ = self.from_

        line_e164: None | str | Unset
        if isinstance(self.line_e164, Unset):
            line_e164 = UNSET
        else:
            line_e164 = self.line_e164

        line_id: None | str | Unset
        if isinstance(self.line_id, Unset):
            line_id = UNSET
        else:
            line_id = self.line_id

        pool_id: None | str | Unset
        if isinstance(self.pool_id, Unset):
            pool_id = UNSET
        else:
            pool_id = self.pool_id

        reply_to: None | str | Unset
        if isinstance(self.reply_to, Unset):
            reply_to = UNSET
        else:
            reply_to = self.reply_to

        send_at: None | str | Unset
        if isinstance(self.send_at, Unset):
            send_at = UNSET
        elif isinstance(self.send_at, datetime.datetime):
            send_at = self.send_at.isoformat()
        else:
            send_at = self.send_at

        to: None | str | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        else:
            to = self.to

        validity_seconds: int | None | Unset
        if isinstance(self.validity_seconds, Unset):
            validity_seconds = UNSET
        else:
            validity_seconds = self.validity_seconds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "options": options,
                "question": question,
            }
        )
        if channel is not UNSET:
            field_dict["channel"] = channel
        if contact_id is not UNSET:
            field_dict["contact_id"] = contact_id
        if conversation_id is not UNSET:
            field_dict["conversation_id"] = conversation_id
        if default_country is not UNSET:
            field_dict["default_country"] = default_country
        if from_ is not UNSET:
            field_dict["from"] = from_
        if line_e164 is not UNSET:
            field_dict["line_e164"] = line_e164
        if line_id is not UNSET:
            field_dict["line_id"] = line_id
        if pool_id is not UNSET:
            field_dict["pool_id"] = pool_id
        if reply_to is not UNSET:
            field_dict["reply_to"] = reply_to
        if send_at is not UNSET:
            field_dict["send_at"] = send_at
        if to is not UNSET:
            field_dict["to"] = to
        if validity_seconds is not UNSET:
            field_dict["validity_seconds"] = validity_seconds

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_options(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                options_type_0 = cast(list[str], data)

                return options_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        options = _parse_options(d.pop("options"))

        def _parse_question(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        question = _parse_question(d.pop("question"))

        def _parse_channel(data: object) -> Channel | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                channel_type_1 = Channel(data)

                return channel_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Channel | None | Unset, data)

        channel = _parse_channel(d.pop("channel", UNSET))

        def _parse_contact_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        contact_id = _parse_contact_id(d.pop("contact_id", UNSET))

        def _parse_conversation_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        conversation_id = _parse_conversation_id(d.pop("conversation_id", UNSET))

        def _parse_default_country(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        default_country = _parse_default_country(d.pop("default_country", UNSET))

        def _parse_from_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))

        def _parse_line_e164(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        line_e164 = _parse_line_e164(d.pop("line_e164", UNSET))

        def _parse_line_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        line_id = _parse_line_id(d.pop("line_id", UNSET))

        def _parse_pool_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        pool_id = _parse_pool_id(d.pop("pool_id", UNSET))

        def _parse_reply_to(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reply_to = _parse_reply_to(d.pop("reply_to", UNSET))

        def _parse_send_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                send_at_type_0 = datetime.datetime.fromisoformat(data)

                return send_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        send_at = _parse_send_at(d.pop("send_at", UNSET))

        def _parse_to(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_validity_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        validity_seconds = _parse_validity_seconds(d.pop("validity_seconds", UNSET))

        send_poll = cls(
            options=options,
            question=question,
            channel=channel,
            contact_id=contact_id,
            conversation_id=conversation_id,
            default_country=default_country,
            from_=from_,
            line_e164=line_e164,
            line_id=line_id,
            pool_id=pool_id,
            reply_to=reply_to,
            send_at=send_at,
            to=to,
            validity_seconds=validity_seconds,
        )

        send_poll.additional_properties = d
        return send_poll

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
