"""Contains all the data models used in inputs/outputs"""

from .agent import Agent
from .agent_fields import AgentFields
from .agent_run import AgentRun
from .applied import Applied
from .availability import Availability
from .capabilities import Capabilities
from .change_participants import ChangeParticipants
from .channel import Channel
from .contact import Contact
from .conversation import Conversation
from .conversation_kind import ConversationKind
from .create_group import CreateGroup
from .create_key import CreateKey
from .create_webhook import CreateWebhook
from .deleted import Deleted
from .delivery_attempt import DeliveryAttempt
from .direction import Direction
from .edit import Edit
from .edit_message import EditMessage
from .error import Error
from .feed_event import FeedEvent
from .feed_event_data import FeedEventData
from .feed_page import FeedPage
from .get_openapi_response_200 import GetOpenapiResponse200
from .group import Group
from .group_change import GroupChange
from .group_changed import GroupChanged
from .group_created import GroupCreated
from .group_refused import GroupRefused
from .health import Health
from .key import Key
from .leave_group import LeaveGroup
from .line import Line
from .line_policy import LinePolicy
from .line_queue import LineQueue
from .line_update import LineUpdate
from .line_usage import LineUsage
from .list_agent import ListAgent
from .list_agent_data_item import ListAgentDataItem
from .list_agent_run import ListAgentRun
from .list_agent_run_data_item import ListAgentRunDataItem
from .list_contact import ListContact
from .list_contact_data_item import ListContactDataItem
from .list_conversation import ListConversation
from .list_conversation_data_item import ListConversationDataItem
from .list_delivery_attempt import ListDeliveryAttempt
from .list_delivery_attempt_data_item import ListDeliveryAttemptDataItem
from .list_key import ListKey
from .list_key_data_item import ListKeyDataItem
from .list_line import ListLine
from .list_line_data_item import ListLineDataItem
from .list_message import ListMessage
from .list_message_data_item import ListMessageDataItem
from .list_message_data_item_contact_card import ListMessageDataItemContactCard
from .list_message_data_item_poll import ListMessageDataItemPoll
from .list_message_data_item_poll_vote import ListMessageDataItemPollVote
from .list_opt_out import ListOptOut
from .list_opt_out_data_item import ListOptOutDataItem
from .list_pool import ListPool
from .list_pool_data_item import ListPoolDataItem
from .list_webhook import ListWebhook
from .list_webhook_attempt import ListWebhookAttempt
from .list_webhook_attempt_data_item import ListWebhookAttemptDataItem
from .list_webhook_data_item import ListWebhookDataItem
from .message import Message
from .message_action import MessageAction
from .message_contact_card import MessageContactCard
from .message_kind import MessageKind
from .message_poll import MessagePoll
from .message_poll_vote import MessagePollVote
from .message_status import MessageStatus
from .opt_out import OptOut
from .poll import Poll
from .pool import Pool
from .pool_fields import PoolFields
from .receive_body import ReceiveBody
from .receive_hook_body import ReceiveHookBody
from .rename_group import RenameGroup
from .replay import Replay
from .replayed import Replayed
from .reply_defaults import ReplyDefaults
from .rotate_key import RotateKey
from .rotate_secret import RotateSecret
from .send_card import SendCard
from .send_fields import SendFields
from .send_message import SendMessage
from .send_poll import SendPoll
from .send_reaction import SendReaction
from .sent import Sent
from .sent_contact_card import SentContactCard
from .sent_poll import SentPoll
from .settings import Settings
from .tally_entry import TallyEntry
from .tapback import Tapback
from .tool_call import ToolCall
from .tool_call_arguments import ToolCallArguments
from .tool_call_result import ToolCallResult
from .update_settings import UpdateSettings
from .update_webhook import UpdateWebhook
from .upsert_contact import UpsertContact
from .webhook import Webhook
from .webhook_attempt import WebhookAttempt

__all__ = (
    "Agent",
    "AgentFields",
    "AgentRun",
    "Applied",
    "Availability",
    "Capabilities",
    "ChangeParticipants",
    "Channel",
    "Contact",
    "Conversation",
    "ConversationKind",
    "CreateGroup",
    "CreateKey",
    "CreateWebhook",
    "Deleted",
    "DeliveryAttempt",
    "Direction",
    "Edit",
    "EditMessage",
    "Error",
    "FeedEvent",
    "FeedEventData",
    "FeedPage",
    "GetOpenapiResponse200",
    "Group",
    "GroupChange",
    "GroupChanged",
    "GroupCreated",
    "GroupRefused",
    "Health",
    "Key",
    "LeaveGroup",
    "Line",
    "LinePolicy",
    "LineQueue",
    "LineUpdate",
    "LineUsage",
    "ListAgent",
    "ListAgentDataItem",
    "ListAgentRun",
    "ListAgentRunDataItem",
    "ListContact",
    "ListContactDataItem",
    "ListConversation",
    "ListConversationDataItem",
    "ListDeliveryAttempt",
    "ListDeliveryAttemptDataItem",
    "ListKey",
    "ListKeyDataItem",
    "ListLine",
    "ListLineDataItem",
    "ListMessage",
    "ListMessageDataItem",
    "ListMessageDataItemContactCard",
    "ListMessageDataItemPoll",
    "ListMessageDataItemPollVote",
    "ListOptOut",
    "ListOptOutDataItem",
    "ListPool",
    "ListPoolDataItem",
    "ListWebhook",
    "ListWebhookAttempt",
    "ListWebhookAttemptDataItem",
    "ListWebhookDataItem",
    "Message",
    "MessageAction",
    "MessageContactCard",
    "MessageKind",
    "MessagePoll",
    "MessagePollVote",
    "MessageStatus",
    "OptOut",
    "Poll",
    "Pool",
    "PoolFields",
    "ReceiveBody",
    "ReceiveHookBody",
    "RenameGroup",
    "Replay",
    "Replayed",
    "ReplyDefaults",
    "RotateKey",
    "RotateSecret",
    "SendCard",
    "SendFields",
    "SendMessage",
    "SendPoll",
    "SendReaction",
    "Sent",
    "SentContactCard",
    "SentPoll",
    "Settings",
    "TallyEntry",
    "Tapback",
    "ToolCall",
    "ToolCallArguments",
    "ToolCallResult",
    "UpdateSettings",
    "UpdateWebhook",
    "UpsertContact",
    "Webhook",
    "WebhookAttempt",
)
