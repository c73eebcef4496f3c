# Owns: catalogue rows of the worker host (`markertools_adapters.worker`, WRK-*): the
# reasons a task ends with when its host stops it, the goal-round texts sent to the
# agent, and the lines of `markertools worker run` / `worker status`. Keys are prefixed
# `worker.`; every row has `en` and `zh`.
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    # why a task ended (WRK-3, WRK-4, WRK-5)
    "worker.request_declined": {
        "en": "the agent asked for {request} ({summary}); the worker host declines every "
        "approval and input request, so the turn was interrupted",
        "zh": "智能体请求了{request}（{summary}）；工作主机拒绝所有审批和输入请求，因此本轮已中断",
    },
    "worker.turn_failed": {"en": "the turn failed: {detail}", "zh": "本轮失败：{detail}"},
    "worker.turn_interrupted": {
        "en": "the turn was interrupted: {detail}",
        "zh": "本轮被中断：{detail}",
    },
    "worker.app_server_exited": {
        "en": "the agent's process ended during the turn ({detail})",
        "zh": "智能体进程在本轮中结束（{detail}）",
    },
    "worker.delivery_failed": {
        "en": "the turn could not be delivered (the store answered but could not finish it): {detail}",
        "zh": "该回合无法投递（存储有应答但无法完成）：{detail}",
    },
    "worker.dir_refused": {
        "en": "the task's directory could not be prepared: {detail}",
        "zh": "无法准备任务目录：{detail}",
    },
    "worker.app_server_failed": {
        "en": "the agent's process could not run the task: {detail}",
        "zh": "智能体进程无法运行该任务：{detail}",
    },
    # goals (WRK-7)
    "worker.goal_phrase": {"en": "GOAL REACHED", "zh": "目标已达成"},
    "worker.goal_continue": {
        "en": "Keep working toward the goal. When it is reached, end your answer with the "
        "line: {phrase}",
        "zh": "继续朝目标努力。目标达成后，请以这一行结束你的回答：{phrase}",
    },
    "worker.goal_round_limit": {
        "en": "the goal was not reached within {rounds} goal rounds",
        "zh": "在 {rounds} 轮目标轮次内未达成目标",
    },
    # quota (WRK-8, WRK-10)
    "worker.quota_held": {
        "en": "creator {user} has used ${used} of a ${total} quota",
        "zh": "创建者 {user} 已用额度 ${used}，共 ${total}",
    },
    # the command (WRK-1, WRK-10)
    "worker.missing_codex": {
        "en": "codex binary not found: {path} (install the Codex CLI: npm install -g "
        "@openai/codex, or give --codex-bin)",
        "zh": "找不到 codex 程序：{path}（安装 Codex CLI：npm install -g @openai/codex，或使用 --codex-bin）",
    },
    "worker.missing_claude": {
        "en": "claude binary not found: {path} (install the Claude Code CLI: "
        "scripts/install_claude.sh or npm install -g @anthropic-ai/claude-code, or give "
        "--claude-bin)",
        "zh": "找不到 claude 程序：{path}（安装 Claude Code CLI：scripts/install_claude.sh 或 "
        "npm install -g @anthropic-ai/claude-code，或使用 --claude-bin）",
    },
    "worker.request_not_brokered": {
        "en": "the agent asked for {request} ({summary}); no rule, person or agent can grant "
        "that kind of request through the worker host, so it was declined and the turn was "
        "interrupted",
        "zh": "智能体请求了{request}（{summary}）；规则、人员或智能体都无法通过工作主机批准此类请求，"
        "因此已拒绝并中断本轮",
    },
    "worker.approval_withdrawn": {
        "en": "the request was withdrawn: the worker host stopped running this task before anyone answered",
        "zh": "请求已撤回：在任何人回答之前，工作主机已停止运行此任务",
    },
    "worker.status.tasks": {"en": "tasks: {counts}", "zh": "任务：{counts}"},
    "worker.status.no_tasks": {"en": "tasks: none", "zh": "任务：无"},
    "worker.status.host": {
        "en": "host {host}: {n} running, lease until {until}",
        "zh": "主机 {host}：运行中 {n} 个，租约到 {until}",
    },
    "worker.status.running": {
        "en": "  {task_id}: turn {turn}, running for {elapsed} s",
        "zh": "  {task_id}：第 {turn} 轮，已运行 {elapsed} 秒",
    },
    "worker.status.held": {
        "en": "held by quota: {task_id} ({reason})",
        "zh": "因额度暂停：{task_id}（{reason}）",
    },
    "worker.status.unknown": {"en": "unknown", "zh": "未知"},
    "worker.status.approval": {
        "en": "awaiting approval: {id} of {task_id} ({kind}: {what}), asked at {asked}; answer with"
        " `markertools approvals approve|deny {id}`",
        "zh": "等待批准：{task_id} 的 {id}（{kind}：{what}），提出于 {asked}；用"
        " `markertools approvals approve|deny {id}` 回答",
    },
    "worker.status.unleased": {
        "en": "no live lease: {task_id} (turn {turn}) is running but no host holds it - {why};"
        " a `markertools worker run` host of its project requeues it after one lease period",
        "zh": "无有效租约：{task_id}（第 {turn} 轮）处于运行状态，但没有主机持有它——{why}；"
        "该项目的 `markertools worker run` 主机会在一个租约期后把它放回队列",
    },
    "worker.status.unleased_expired": {
        "en": "host {host}'s lease ended at {until}",
        "zh": "主机 {host} 的租约已于 {until} 结束",
    },
    "worker.status.unleased_no_lease": {
        "en": "host {host} claimed it without a lease",
        "zh": "主机 {host} 认领它时没有租约",
    },
    "worker.status.unleased_no_host": {
        "en": "no host ever claimed it (written running, e.g. by a world file)",
        "zh": "从未有主机认领它（例如由世界文件直接写为运行中）",
    },
}
