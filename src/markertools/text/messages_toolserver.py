# Owns: catalogue rows (en + zh) of the MCP tool server `markertools tools serve`
# (TOL-1, TOL-6): the line every tool description ends with, and what a wait cut short
# by the server's wait limit or by a cancelled request says. Keys are prefixed
# "toolserver.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    "toolserver.same_call": {
        "en": "As a tool, the result comes back in this same call (not in the next turn's report).",
        "zh": "作为工具调用时，结果在本次调用中直接返回（而不是下一轮的报告）。",
    },
    "toolserver.ids_not_names": {
        "en": 'Name tasks by their ids (task_create answers the new id): "@NAME" references work only between the marker blocks of one turn, never across tool calls.',
        "zh": "请用任务 id 指代任务（task_create 会返回新任务的 id）：\"@NAME\" 引用只在同一轮的标记块之间有效，不能跨工具调用使用。",
    },
    "toolserver.cut_short": {
        "en": "This call waited the server's limit of {ms} ms per call; still running: {ids}. Repeat the call to keep waiting.",
        "zh": "本次调用已等待到服务器的单次上限 {ms} 毫秒；仍在运行：{ids}。再次调用即可继续等待。",
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
