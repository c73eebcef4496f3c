# Owns: catalogue rows (en + zh) of the MCP tool server `markertools tools serve`
# (TOL-1, TOL-6, TOL-11, FLT-3): the line every tool description ends with, the one
# piece of advice a wait cut short by the server's wait limit ends with (call again
# while the turn's cap of the tool allows, else check on the tasks next turn), and the
# server's own refusals: a token's bound on calls or sessions, a client gone, a store
# outage. Keys are prefixed "toolserver.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    "toolserver.not_on_this_host": {
        "en": "task {task_id} is not running on this worker host",
        "zh": "任务 {task_id} 不在本工作主机上运行",
    },
    "toolserver.same_call": {
        "en": "As a tool, the result comes back in this same call (not in the next turn's report).",
        "zh": "作为工具调用时，结果在本次调用中直接返回（而不是下一轮的报告）。",
    },
    "toolserver.ids_not_names": {
        "en": 'Name tasks by their ids (task_create answers the new id): "@NAME" references work only between the marker blocks of one turn, never across tool calls.',
        "zh": "请用任务 id 指代任务（task_create 会返回新任务的 id）：\"@NAME\" 引用只在同一轮的标记块之间有效，不能跨工具调用使用。",
    },
    "toolserver.cut_short": {
        "en": "This call waited the server's limit of {ms} ms per call; still running: {ids}. Call {tool} again to keep waiting: this turn allows {left} more.",
        "zh": "本次调用已等待到服务器的单次上限 {ms} 毫秒；仍在运行：{ids}。再次调用 {tool} 即可继续等待：本轮还可调用 {left} 次。",
    },
    "toolserver.cut_short_last": {
        "en": "This call waited the server's limit of {ms} ms per call; still running: {ids}. It was the last {tool} call this turn allows (at most {cap} per turn, blocks included), so another would be ignored: check on them in your next turn.",
        "zh": "本次调用已等待到服务器的单次上限 {ms} 毫秒；仍在运行：{ids}。这是本轮允许的最后一次 {tool} 调用（每轮最多 {cap} 次，含标记块），再调用也会被忽略：请在下一轮再查看它们。",
    },
    "toolserver.cut_short_cap": {
        "en": "This call waited the server's limit of {ms} ms per call; still running: {ids}. Call {tool} again to keep waiting if this turn's cap allows (at most {cap} per turn, blocks included); else check on them in your next turn.",
        "zh": "本次调用已等待到服务器的单次上限 {ms} 毫秒；仍在运行：{ids}。若本轮上限允许（每轮最多 {cap} 次，含标记块），再次调用 {tool} 即可继续等待；否则请在下一轮再查看它们。",
    },
    "toolserver.too_many_calls": {
        "en": "rejected: too many calls at once for this token: at most {max} run at the same time (--max-calls-per-token); call again once one has answered",
        "zh": "已拒绝：此令牌同时进行的调用过多：最多同时运行 {max} 个（--max-calls-per-token）；请在某个调用返回后再调用",
    },
    "toolserver.too_many_sessions": {
        "en": "too many open sessions for this token: at most {max} (--max-sessions-per-token), each of them busy; end one (DELETE) or wait for one to finish",
        "zh": "此令牌打开的会话过多：最多 {max} 个（--max-sessions-per-token），且每个都在使用中；请结束一个（DELETE）或等待其完成",
    },
    "toolserver.client_gone": {
        "en": "rejected: the client disconnected; the call ended",
        "zh": "已拒绝：客户端已断开连接，调用已结束",
    },
    "toolserver.store_outage": {
        "en": "rejected: the store has been unavailable for {seconds} s ({error}); nothing was done - call again later",
        "zh": "已拒绝：存储已不可用 {seconds} 秒（{error}）；未做任何操作——请稍后再调用",
    },
    "toolserver.cancelled": {
        "en": "The request was cancelled; waiting stopped. Still running: {ids}.",
        "zh": "请求已取消，等待已停止。仍在运行：{ids}。",
    },
    "toolserver.internal": {
        "en": "rejected: the call failed inside the server ({error})",
        "zh": "已拒绝：调用在服务器内部失败（{error}）",
    },
}
