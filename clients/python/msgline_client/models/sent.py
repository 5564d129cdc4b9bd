from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.message import Message
    from ..models.sent_contact_card import SentContactCard
    from ..models.sent_poll import SentPoll


T = TypeVar("T", bound="Sent")


@_attrs_define
class Sent:
    """The answer to a send: the message, and whether this is a replay of an earlier request.

    Attributes:
        delivery_unknown (bool):
        duplicate (bool): `true` when an `Idempotency-Key` replayed an earlier answer (status 200).
        message (Message): A message, outbound or inbound. A contact card, a poll and a poll vote add their object.
        contact_card (SentContactCard | Unset): On `POST /contact-cards`.
        poll (SentPoll | Unset): On `POST /polls`: `{id, question, options}`.
    """

    delivery_unknown: bool
    duplicate: bool
    message: Message
    contact_card: SentContactCard | Unset = UNSET
    poll: SentPoll | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        delivery_unknown = self.delivery_unknown

        duplicate = self.duplicate

        message = self.message.to_dict()

        contact_card: dict[str, Any] | Unset = UNSET
        if not isinstance(self.contact_card, Unset):
            contact_card = self.contact_card.to_dict()

        poll: dict[str, Any] | Unset = UNSET
        if not isinstance(self.poll, Unset):
            poll = self.poll.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "delivery_unknown": delivery_unknown,
                "duplicate": duplicate,
                "message": message,
            }
        )
        if contact_card is not UNSET:
            field_dict["contact_card"] = contact_card
        if poll is not UNSET:
            field_dict["poll"] = poll

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.message import Message  # noqa: PLC0415
        from ..models.sent_contact_card import SentContactCard  # noqa: PLC0415
        from ..models.sent_poll import SentPoll  # noqa: PLC0415

        d = dict(src_dict)
        delivery_unknown = d.pop("delivery_unknown")

        duplicate = d.pop("duplicate")

        message = Message.from_dict(d.pop("message"))

        _contact_card = d.pop("contact_card", UNSET)
        contact_card: SentContactCard | Unset
        if isinstance(_contact_card, Unset):
            contact_card = UNSET
        else:
            contact_card = SentContactCard.from_dict(_contact_card)

        _poll = d.pop("poll", UNSET)
        poll: SentPoll | Unset
        if isinstance(_poll, Unset):
            poll = UNSET
        else:
            poll = SentPoll.from_dict(_poll)

        sent = cls(
            delivery_unknown=delivery_unknown,
            duplicate=duplicate,
            message=message,
            contact_card=contact_card,
            poll=poll,
        )

        sent.additional_properties = d
        return sent

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
