# Owns: the one list of the Codex app-server protocol this project depends on — every
# (method, field path) the client, the readers and the supervisor send or read — checked
# against the JSON Schema the pinned binary generates by
# tests/adapters/codex/test_codex_schema.py (`codex app-server generate-json-schema`).
#
# Add a pair here whenever new code sends or reads a method or a field; the test then
# fails on the first Codex version that drops or renames it.
#
# Path syntax: "params.a.b" is a field of the message's params, "result.a" one of the
# response to a request (a client request's, or ours to a server request), "[]" steps
# into array items ("result.data[].id"). A method alone (path "") only has to exist.
# The method's kind (client request or notification, server notification or request)
# is looked up in the schema, not declared here.
#
# Must never: import anything (it is data), or list a field nothing uses.
from __future__ import annotations

from typing import Final

USED_SCHEMA: Final[tuple[tuple[str, str], ...]] = (
    # handshake (client.py)
    ("initialize", "params.clientInfo"),
    ("initialize", "params.capabilities"),
    ("initialized", ""),
    # threads and turns (client.py, supervisor)
    ("thread/start", "params.cwd"),
    ("thread/start", "params.sandbox"),
    ("thread/start", "params.approvalPolicy"),
    ("thread/start", "params.model"),
    ("thread/start", "params.developerInstructions"),
    ("thread/start", "result.thread.id"),
    ("thread/start", "result.thread.path"),
    ("thread/resume", "params.threadId"),
    ("thread/resume", "params.cwd"),
    ("thread/resume", "params.sandbox"),
    ("thread/resume", "params.approvalPolicy"),
    ("thread/resume", "params.model"),
    ("thread/resume", "result.thread.id"),
    ("turn/start", "params.threadId"),
    ("turn/start", "params.input[].type"),
    ("turn/start", "params.input[].text"),
    ("turn/start", "params.model"),
    ("turn/start", "params.effort"),
    ("turn/start", "result.turn.id"),
    ("turn/interrupt", "params.threadId"),
    ("turn/interrupt", "params.turnId"),
    ("thread/list", "params.cursor"),
    ("thread/list", "params.limit"),
    ("thread/list", "params.cwd"),
    ("thread/list", "params.searchTerm"),
    ("thread/list", "params.archived"),
    ("thread/list", "result.data"),
    ("thread/list", "result.data[].id"),
    ("thread/list", "result.nextCursor"),
    ("thread/read", "params.threadId"),
    ("thread/read", "params.includeTurns"),
    ("thread/read", "result.thread.turns"),
    ("thread/revert", "params.threadId"),  # the real-capture tests
    ("thread/revert", "params.beforeTurnId"),
    # models and limits (supervisor)
    ("model/list", "result.data[].model"),
    ("model/list", "result.data[].id"),
    ("model/list", "result.data[].supportedReasoningEfforts[].reasoningEffort"),
    ("model/list", "result.data[].isDefault"),
    ("model/list", "result.data[].defaultReasoningEffort"),
    ("account/rateLimits/read", ""),
    # notifications (the app-server reader _appserver.py, the supervisor)
    ("thread/started", "params.thread.id"),
    ("turn/started", "params.threadId"),
    ("turn/started", "params.turn.id"),
    ("turn/completed", "params.threadId"),
    ("turn/completed", "params.turn.id"),
    ("turn/completed", "params.turn.status"),
    ("turn/completed", "params.turn.error.message"),
    ("turn/completed", "params.turn.items"),
    ("item/completed", "params.threadId"),
    ("item/completed", "params.turnId"),
    ("item/completed", "params.item.type"),
    ("item/completed", "params.item.id"),
    ("item/completed", "params.item.text"),
    ("error", "params.threadId"),
    ("error", "params.turnId"),
    ("error", "params.willRetry"),
    ("error", "params.error.message"),
    ("thread/reverted", "params.threadId"),
    ("account/rateLimits/updated", "params.rateLimits.limitId"),
    ("account/rateLimits/updated", "params.rateLimits.primary.usedPercent"),
    ("account/rateLimits/updated", "params.rateLimits.primary.windowDurationMins"),
    ("account/rateLimits/updated", "params.rateLimits.primary.resetsAt"),
    ("account/rateLimits/updated", "params.rateLimits.secondary"),
    ("account/rateLimits/updated", "params.rateLimits.credits"),
    # server requests and our answers (supervisor)
    ("item/commandExecution/requestApproval", "params.threadId"),
    ("item/commandExecution/requestApproval", "params.turnId"),
    ("item/commandExecution/requestApproval", "result.decision"),
    ("item/fileChange/requestApproval", "params.threadId"),
    ("item/fileChange/requestApproval", "params.turnId"),
    ("item/fileChange/requestApproval", "result.decision"),
    ("item/permissions/requestApproval", "params.threadId"),
    ("item/permissions/requestApproval", "result.permissions"),
    ("item/tool/requestUserInput", "params.questions"),
    ("item/tool/requestUserInput", "result.answers"),
    ("mcpServer/elicitation/request", "params.threadId"),
    ("mcpServer/elicitation/request", "result.action"),
)

# Enum values we send, per (method, path): each must be one the schema allows there.
USED_VALUES: Final[dict[tuple[str, str], tuple[str, ...]]] = {
    ("item/commandExecution/requestApproval", "result.decision"): ("accept", "decline", "cancel"),
    ("item/fileChange/requestApproval", "result.decision"): ("accept", "decline", "cancel"),
    ("mcpServer/elicitation/request", "result.action"): ("accept", "decline", "cancel"),
    ("thread/start", "params.sandbox"): ("read-only", "workspace-write"),
    ("thread/start", "params.approvalPolicy"): ("on-request", "never"),
}

# Responses whose schema file is not named after the params (`<X>Params` -> `<X>Response`).
RESPONSE_SCHEMAS: Final[dict[str, str]] = {
    "account/rateLimits/read": "GetAccountRateLimitsResponse",
}
