from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.channel import Channel
from ..models.direction import Direction
from ..models.message_kind import MessageKind
from ..models.message_status import MessageStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.edit import Edit
    from ..models.list_message_data_item_contact_card import ListMessageDataItemContactCard
    from ..models.list_message_data_item_poll import ListMessageDataItemPoll
    from ..models.list_message_data_item_poll_vote import ListMessageDataItemPollVote
    from ..models.message_action import MessageAction


T = TypeVar("T", bound="ListMessageDataItem")


@_attrs_define
class ListMessageDataItem:
    """A message, outbound or inbound. A contact card, a poll and a poll vote add their object.

    Attributes:
        body (str): The text (as last edited; an unsent message keeps it as the organisation's record).
        channel (Channel):
        conversation_id (str):
        created_at (datetime.datetime):
        delivery_unknown (bool): The line may or may not have the message; msgline asks until it knows.
        direction (Direction):
        edits (list[Edit]): Its earlier texts, oldest first.
        id (str): `msg_…`
        kind (MessageKind):
        line_id (str):
        status (MessageStatus):
        updated_at (datetime.datetime):
        action (MessageAction | None | Unset):
        agent_id (None | str | Unset): The hosted agent that sent it.
        contact_card (ListMessageDataItemContactCard | Unset): On `kind: contact_card`: the card's name and phone.
        contact_id (None | str | Unset):
        delivered_at (datetime.datetime | None | Unset):
        edited_at (datetime.datetime | None | Unset): When it was last edited (by msgline, or by its sender on their
            device).
        effect (None | str | Unset): The iMessage effect it was sent with (`slam`, `confetti`, …).
        error (None | str | Unset): Why the message failed, or what is known of an uncertain send.
        fallback_for (None | str | Unset): On an SMS sent in a failed iMessage's place: that iMessage (`msg_…`).
        fallback_message_id (None | str | Unset): On an iMessage that fell back to SMS: the SMS (`msg_…`).
        from_ (None | str | Unset): The sender: the line's number on an outbound message, the contact's (E.164, or the
            handle
            as the line reported it) on an inbound one.
        poll (ListMessageDataItemPoll | Unset): On `kind: poll`: the poll's id, question and options.
        poll_vote (ListMessageDataItemPollVote | Unset): On `kind: poll_vote`: the poll, the option chosen and its
            index, and a text reply.
        read_at (datetime.datetime | None | Unset):
        reply_to (None | str | Unset): The message of the conversation this one answers (an inline reply), `msg_…`.
        send_at (datetime.datetime | None | Unset): A scheduled send's time (`null` for a message sent at once).
        sent_at (datetime.datetime | None | Unset):
        subject (None | str | Unset): The iMessage subject it was sent with.
        submitted_at (datetime.datetime | None | Unset):
        to (None | str | Unset): The recipient: the contact's number on an outbound message, the line's on an inbound
            one;
            `null` in a group (the conversation names the group).
        unsent_at (datetime.datetime | None | Unset): When it was unsent.
    """

    body: str
    channel: Channel
    conversation_id: str
    created_at: datetime.datetime
    delivery_unknown: bool
    direction: Direction
    edits: list[Edit]
    id: str
    kind: MessageKind
    line_id: str
    status: MessageStatus
    updated_at: datetime.datetime
    action: MessageAction | None | Unset = UNSET
    agent_id: None | str | Unset = UNSET
    contact_card: ListMessageDataItemContactCard | Unset = UNSET
    contact_id: None | str | Unset = UNSET
    delivered_at: datetime.datetime | None | Unset = UNSET
    edited_at: datetime.datetime | None | Unset = UNSET
    effect: None | str | Unset = UNSET
    error: None | str | Unset = UNSET
    fallback_for: None | str | Unset = UNSET
    fallback_message_id: None | str | Unset = UNSET
    from_: None | str | Unset = UNSET
    poll: ListMessageDataItemPoll | Unset = UNSET
    poll_vote: ListMessageDataItemPollVote | Unset = UNSET
    read_at: datetime.datetime | None | Unset = UNSET
    reply_to: None | str | Unset = UNSET
    send_at: datetime.datetime | None | Unset = UNSET
    sent_at: datetime.datetime | None | Unset = UNSET
    subject: None | str | Unset = UNSET
    submitted_at: datetime.datetime | None | Unset = UNSET
    to: None | str | Unset = UNSET
    unsent_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.message_action import MessageAction  # noqa: PLC0415

        body = self.body

        channel = self.channel.value

        conversation_id = self.conversation_id

        created_at = self.created_at.isoformat()

        delivery_unknown = self.delivery_unknown

        direction = self.direction.value

        edits = []
        for edits_item_data in self.edits:
            edits_item = edits_item_data.to_dict()
            edits.append(edits_item)

        id = self.id

        kind = self.kind.value

        line_id = self.line_id

        status = self.status.value

        updated_at = self.updated_at.isoformat()

        action: dict[str, Any] | None | Unset
        if isinstance(self.action, Unset):
            action = UNSET
        elif isinstance(self.action, MessageAction):
            action = self.action.to_dict()
        else:
            action = self.action

        agent_id: None | str | Unset
        if isinstance(self.agent_id, Unset):
            agent_id = UNSET
        else:
            agent_id = self.agent_id

        contact_card: dict[str, Any] | Unset = UNSET
        if not isinstance(self.contact_card, Unset):
            contact_card = self.contact_card.to_dict()

        contact_id: None | str | Unset
        if isinstance(self.contact_id, Unset):
            contact_id = UNSET
        else:
            contact_id = self.contact_id

        delivered_at: None | str | Unset
        if isinstance(self.delivered_at, Unset):
            delivered_at = UNSET
        elif isinstance(self.delivered_at, datetime.datetime):
            delivered_at = self.delivered_at.isoformat()
        else:
            delivered_at = self.delivered_at

        edited_at: None | str | Unset
        if isinstance(self.edited_at, Unset):
            edited_at = UNSET
        elif isinstance(self.edited_at, datetime.datetime):
            edited_at = self.edited_at.isoformat()
        else:
            edited_at = self.edited_at

        effect: None | str | Unset
        if isinstance(self.effect, Unset):
            effect = UNSET
        else:
            effect = self.effect

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        fallback_for: None | str | Unset
        if isinstance(self.fallback_for, Unset):
            fallback_for = UNSET
        else:
            fallback_for = self.fallback_for

        fallback_message_id: None | str | Unset
        if isinstance(self.fallback_message_id, Unset):
            fallback_message_id = UNSET
        else:
            fallback_message_id = self.fallback_message_id

        from_: None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        else:
            from_ = self.from_

        poll: dict[str, Any] | Unset = UNSET
        if not isinstance(self.poll, Unset):
            poll = self.poll.to_dict()

        poll_vote: dict[str, Any] | Unset = UNSET
        if not isinstance(self.poll_vote, Unset):
            poll_vote = self.poll_vote.to_dict()

        read_at: None | str | Unset
        if isinstance(self.read_at, Unset):
            read_at = UNSET
        elif isinstance(self.read_at, datetime.datetime):
            read_at = self.read_at.isoformat()
        else:
            read_at = self.read_at

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

        sent_at: None | str | Unset
        if isinstance(self.sent_at, Unset):
            sent_at = UNSET
        elif isinstance(self.sent_at, datetime.datetime):
            sent_at = self.sent_at.isoformat()
        else:
            sent_at = self.sent_at

        subject: None | str | Unset
        if isinstance(self.subject, Unset):
            subject = UNSET
        else:
            subject = self.subject

        submitted_at: None | str | Unset
        if isinstance(self.submitted_at, Unset):
            submitted_at = UNSET
        elif isinstance(self.submitted_at, datetime.datetime):
            submitted_at = self.submitted_at.isoformat()
        else:
            submitted_at = self.submitted_at

        to: None | str | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        else:
            to = self.to

        unsent_at: None | str | Unset
        if isinstance(self.unsent_at, Unset):
            unsent_at = UNSET
        elif isinstance(self.unsent_at, datetime.datetime):
            unsent_at = self.unsent_at.isoformat()
        else:
            unsent_at = self.unsent_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "body": body,
                "channel": channel,
                "conversation_id": conversation_id,
                "created_at": created_at,
                "delivery_unknown": delivery_unknown,
                "direction": direction,
                "edits": edits,
                "id": id,
                "kind": kind,
                "line_id": line_id,
                "status": status,
                "updated_at": updated_at,
            }
        )
        if action is not UNSET:
            field_dict["action"] = action
        if agent_id is not UNSET:
            field_dict["agent_id"] = agent_id
        if contact_card is not UNSET:
            field_dict["contact_card"] = contact_card
        if contact_id is not UNSET:
            field_dict["contact_id"] = contact_id
        if delivered_at is not UNSET:
            field_dict["delivered_at"] = delivered_at
        if edited_at is not UNSET:
            field_dict["edited_at"] = edited_at
        if effect is not UNSET:
            field_dict["effect"] = effect
        if error is not UNSET:
            field_dict["error"] = error
        if fallback_for is not UNSET:
            field_dict["fallback_for"] = fallback_for
        if fallback_message_id is not UNSET:
            field_dict["fallback_message_id"] = fallback_message_id
        if from_ is not UNSET:
            field_dict["from"] = from_
        if poll is not UNSET:
            field_dict["poll"] = poll
        if poll_vote is not UNSET:
            field_dict["poll_vote"] = poll_vote
        if read_at is not UNSET:
            field_dict["read_at"] = read_at
        if reply_to is not UNSET:
            field_dict["reply_to"] = reply_to
        if send_at is not UNSET:
            field_dict["send_at"] = send_at
        if sent_at is not UNSET:
            field_dict["sent_at"] = sent_at
        if subject is not UNSET:
            field_dict["subject"] = subject
        if submitted_at is not UNSET:
            field_dict["submitted_at"] = submitted_at
        if to is not UNSET:
            field_dict["to"] = to
        if unsent_at is not UNSET:
            field_dict["unsent_at"] = unsent_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.edit import Edit  # noqa: PLC0415
        from ..models.list_message_data_item_contact_card import ListMessageDataItemContactCard  # noqa: PLC0415
        from ..models.list_message_data_item_poll import ListMessageDataItemPoll  # noqa: PLC0415
        from ..models.list_message_data_item_poll_vote import ListMessageDataItemPollVote  # noqa: PLC0415
        from ..models.message_action import MessageAction  # noqa: PLC0415

        d = dict(src_dict)
        body = d.pop("body")

        channel = Channel(d.pop("channel"))

        conversation_id = d.pop("conversation_id")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        delivery_unknown = d.pop("delivery_unknown")

        direction = Direction(d.pop("direction"))

        edits = []
        _edits = d.pop("edits")
        for edits_item_data in _edits:
            edits_item = Edit.from_dict(edits_item_data)

            edits.append(edits_item)

        id = d.pop("id")

        kind = MessageKind(d.pop("kind"))

        line_id = d.pop("line_id")

        status = MessageStatus(d.pop("status"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_action(data: object) -> MessageAction | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                action_type_1 = MessageAction.from_dict(data)

                return action_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MessageAction | None | Unset, data)

        action = _parse_action(d.pop("action", UNSET))

        def _parse_agent_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        agent_id = _parse_agent_id(d.pop("agent_id", UNSET))

        _contact_card = d.pop("contact_card", UNSET)
        contact_card: ListMessageDataItemContactCard | Unset
        if isinstance(_contact_card, Unset):
            contact_card = UNSET
        else:
            contact_card = ListMessageDataItemContactCard.from_dict(_contact_card)

        def _parse_contact_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        contact_id = _parse_contact_id(d.pop("contact_id", UNSET))

        def _parse_delivered_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                delivered_at_type_0 = datetime.datetime.fromisoformat(data)

                return delivered_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        delivered_at = _parse_delivered_at(d.pop("delivered_at", UNSET))

        def _parse_edited_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                edited_at_type_0 = datetime.datetime.fromisoformat(data)

                return edited_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        edited_at = _parse_edited_at(d.pop("edited_at", UNSET))

        def _parse_effect(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        effect = _parse_effect(d.pop("effect", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_fallback_for(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        fallback_for = _parse_fallback_for(d.pop("fallback_for", UNSET))

        def _parse_fallback_message_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        fallback_message_id = _parse_fallback_message_id(d.pop("fallback_message_id", UNSET))

        def _parse_from_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))

        _poll = d.pop("poll", UNSET)
        poll: ListMessageDataItemPoll | Unset
        if isinstance(_poll, Unset):
            poll = UNSET
        else:
            poll = ListMessageDataItemPoll.from_dict(_poll)

        _poll_vote = d.pop("poll_vote", UNSET)
        poll_vote: ListMessageDataItemPollVote | Unset
        if isinstance(_poll_vote, Unset):
            poll_vote = UNSET
        else:
            poll_vote = ListMessageDataItemPollVote.from_dict(_poll_vote)

        def _parse_read_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                read_at_type_0 = datetime.datetime.fromisoformat(data)

                return read_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        read_at = _parse_read_at(d.pop("read_at", UNSET))

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

        def _parse_sent_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                sent_at_type_0 = datetime.datetime.fromisoformat(data)

                return sent_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        sent_at = _parse_sent_at(d.pop("sent_at", UNSET))

        def _parse_subject(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        subject = _parse_subject(d.pop("subject", UNSET))

        def _parse_submitted_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                submitted_at_type_0 = datetime.datetime.fromisoformat(data)

                return submitted_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        submitted_at = _parse_submitted_at(d.pop("submitted_at", UNSET))

        def _parse_to(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_unsent_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                unsent_at_type_0 = datetime.datetime.fromisoformat(data)

                return unsent_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        unsent_at = _parse_unsent_at(d.pop("unsent_at", UNSET))

        list_message_data_item = cls(
            body=body,
            channel=channel,
            conversation_id=conversation_id,
            created_at=created_at,
            delivery_unknown=delivery_unknown,
            direction=direction,
            edits=edits,
            id=id,
            kind=kind,
            line_id=line_id,
            status=status,
            updated_at=updated_at,
            action=action,
            agent_id=agent_id,
            contact_card=contact_card,
            contact_id=contact_id,
            delivered_at=delivered_at,
            edited_at=edited_at,
            effect=effect,
            error=error,
            fallback_for=fallback_for,
            fallback_message_id=fallback_message_id,
            from_=from_,
            poll=poll,
            poll_vote=poll_vote,
            read_at=read_at,
            reply_to=reply_to,
            send_at=send_at,
            sent_at=sent_at,
            subject=subject,
            submitted_at=submitted_at,
            to=to,
            unsent_at=unsent_at,
        )

        list_message_data_item.additional_properties = d
        return list_message_data_item

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
