# Owns: catalogue rows for same-turn tools (en + zh): task-token refusals (TOL-3), a
# call's head line and refusals (TOL-2, TOL-4, TOL-5, TOL-7). Keys are prefixed "tools.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    "tools.not_authorised": {"en": "not authorised: {why}", "zh": "未授权：{why}"},
    "tools.no_token": {"en": "no token", "zh": "没有令牌"},
    "tools.unknown_token": {"en": "unknown token", "zh": "未知令牌"},
    "tools.token_expired": {"en": "token expired", "zh": "令牌已过期"},
    "tools.token_revoked": {"en": "token revoked", "zh": "令牌已撤销"},
    "tools.task_missing": {"en": "the bound task does not exist", "zh": "绑定的任务不存在"},
    "tools.task_not_running": {
        "en": "task is not running ({status})",
        "zh": "任务未在运行（{status}）",
    },
    "tools.token_check_failed": {
        "en": "the token could not be checked ({error}); refused (fail closed)",
        "zh": "无法校验令牌（{error}）；已拒绝（失败即拒绝）",
    },
    "tools.entry": {"en": "{kind}: {outcome}", "zh": "{kind}：{outcome}"},
    "tools.entry_target": {
        "en": "{kind} → {target}: {outcome}",
        "zh": "{kind} → {target}：{outcome}",
    },
    "tools.goal_after_turn": {
        "en": "It takes effect after this turn: the /goal follow-up is queued after this turn's report.",
        "zh": "本轮结束后生效：/goal 后续消息将在本轮报告之后排队。",
    },
    "tools.unknown_tool": {
        "en": "refused: {name} is not a tool (the tools are the canonical marker kinds, with _ for -)",
        "zh": "已拒绝：{name} 不是工具（工具名为标记种类的规范名，以 _ 代替 -）",
    },
    "tools.no_ledger": {
        "en": "refused: this store keeps no per-turn call ledger, so tool calls can not share the turn's caps; nothing changed",
        "zh": "已拒绝：该存储没有每轮调用台账，工具调用无法共享本轮上限；未做任何改动",
    },
    "tools.no_journal": {
        "en": "refused: a call id needs a store with a delivery journal; nothing changed",
        "zh": "已拒绝：调用 ID 需要带投递日志的存储；未做任何改动",
    },
    "tools.bad_call_id": {
        "en": "refused: the call id must be a non-blank string of at most {max} characters; nothing changed",
        "zh": "已拒绝：调用 ID 必须是不超过 {max} 个字符的非空字符串；未做任何改动",
    },
    "tools.sender_not_running": {
        "en": "refused: the bound task is not running ({status}); nothing changed",
        "zh": "已拒绝：绑定的任务未在运行（{status}）；未做任何改动",
    },
    "tools.arguments_not_object": {
        "en": "skipped: the arguments must be a JSON object, got {got}",
        "zh": "已跳过：参数必须是 JSON 对象，实际为 {got}",
    },
    "tools.arguments_bad_value": {
        "en": "skipped: the arguments hold a value JSON can not spell ({what})",
        "zh": "已跳过：参数含有 JSON 无法表示的值（{what}）",
    },
    "tools.arguments_too_long": {
        "en": "skipped: the arguments are longer than a block body may be ({max} characters)",
        "zh": "已跳过：参数超过标记块正文的长度上限（{max} 个字符）",
    },
}
