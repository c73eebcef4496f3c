# Owns: catalogue rows for the read area (en + zh): task snapshots (POL-4), wait-threads,
# task-list, task-cost and quota-status results. Keys are prefixed "read.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    # ---- layout helpers ----
    "read.empty": {"en": "(nothing)", "zh": "（无）"},
    "read.join_blank": {"en": "{head}\n\n{rest}", "zh": "{head}\n\n{rest}"},
    "read.join_line": {"en": "{head}\n{rest}", "zh": "{head}\n{rest}"},
    # ---- snapshot (POL-4) ----
    "read.snapshot": {
        "en": "task {id}: status '{status}', {state}; {model}.\n{output}",
        "zh": "任务 {id}：状态“{status}”，{state}；{model}。\n{output}",
    },
    "read.state_finished": {"en": "finished", "zh": "已结束"},
    "read.state_now": {
        "en": "not finished (an immediate snapshot; no waiting was asked for)",
        "zh": "未结束（即时快照；未要求等待）",
    },
    "read.state_stopped": {
        "en": "NOT finished: stopped waiting after {seconds} s because the delivery was cancelled, last status seen '{status}'; poll again in a later turn",
        "zh": "未结束：投递已被取消，等待 {seconds} 秒后停止，最后看到的状态为“{status}”；可在之后的轮次再次查询",
    },
    "read.state_deadline": {
        "en": "NOT finished: stopped waiting after {seconds} s because the delivery's deadline passed ({deadline} s from its start, shared by every poll and wait of the turn), last status seen '{status}'; poll again in a later turn",
        "zh": "未结束：投递的截止时间已到（从投递开始共 {deadline} 秒，本轮所有查询与等待共用），等待 {seconds} 秒后停止，最后看到的状态为“{status}”；可在之后的轮次再次查询",
    },
    "read.state_call_limit": {
        "en": "NOT finished: stopped waiting after {seconds} s, the limit of one call ({deadline} s), last status seen '{status}'",
        "zh": "未结束：等待 {seconds} 秒后停止，已到单次调用的上限（{deadline} 秒），最后看到的状态为“{status}”",
    },
    "read.state_timed_out": {
        "en": "NOT finished: timed out after {seconds} s, last status seen '{status}'",
        "zh": "未结束：等待 {seconds} 秒后超时，最后看到的状态为“{status}”",
    },
    "read.state_approval": {
        "en": "NOT finished: it waits for an answer to an approval request, so the wait ended early after {seconds} s (you may answer it), last status seen '{status}'",
        "zh": "未结束：它在等待审批请求的回答，因此等待在 {seconds} 秒后提前结束（你可以回答），最后看到的状态为“{status}”",
    },
    "read.state_ended_early": {
        "en": "NOT finished: the wait ended early after {seconds} s because another target waits for an approval answer you may give, last status seen '{status}'",
        "zh": "未结束：另一个目标在等待你可以给出的审批回答，因此等待在 {seconds} 秒后提前结束，最后看到的状态为“{status}”",
    },
    "read.state_sender_cancelled": {
        "en": "not finished: waiting stopped early because you (the sender) were cancelled",
        "zh": "未结束：你（发送方）已被取消，等待提前停止",
    },
    "read.state_vanished": {
        "en": "the task disappeared while being watched; last status seen '{status}'",
        "zh": "观察期间该任务已消失；最后看到的状态为“{status}”",
    },
    "read.model": {"en": "model {model}", "zh": "模型 {model}"},
    "read.model_none": {"en": "model unknown", "zh": "模型未知"},
    "read.model_in_data": {
        "en": "model name is not a plain identifier, shown inside the data below",
        "zh": "模型名不是普通标识符，见下方数据",
    },
    "read.frame_label": {"en": "output of task {id}", "zh": "任务 {id} 的输出"},
    "read.output_none": {"en": "output: none yet", "zh": "输出：暂无"},
    "read.output_none_framed": {"en": "output: none yet\n{framed}", "zh": "输出：暂无\n{framed}"},
    "read.output_full": {
        "en": "output ({total} characters, complete):\n{framed}",
        "zh": "输出（共 {total} 字，完整）：\n{framed}",
    },
    "read.output_cut": {
        "en": "output: the last {kept} of {total} characters ({cut} earlier characters cut):\n{framed}",
        "zh": "输出：共 {total} 字中的最后 {kept} 字（前面 {cut} 字已截去）：\n{framed}",
    },
    # ---- wait-threads ----
    "read.wait_header": {
        "en": "waited {seconds} s for {waited} task(s): {finished} finished, {open} not finished; {settled} target(s) settled at once",
        "zh": "等待 {waited} 个任务共 {seconds} 秒：{finished} 个已结束，{open} 个未结束；{settled} 个目标当场处理",
    },
    "read.wait_settled": {
        "en": "task {id}: not waited for: {reason}",
        "zh": "任务 {id}：未等待：{reason}",
    },
    "read.wait_dropped": {
        "en": "not waited for (over the 8-target limit of one block): {ids}",
        "zh": "未等待（超出单块 8 个目标的上限）：{ids}",
    },
    "read.wait_none_valid": {
        "en": "no target can be waited for:\n{details}",
        "zh": "没有可以等待的目标：\n{details}",
    },
    # ---- task-list ----
    "read.list_filters": {"en": "status {status}, q {q}", "zh": "状态 {status}，q {q}"},
    "read.list_all_statuses": {"en": "any", "zh": "全部"},
    "read.list_empty": {
        "en": "no task of your project matches ({filters})",
        "zh": "本项目没有匹配的任务（{filters}）",
    },
    "read.list_count": {"en": "{status} {n}", "zh": "{status} {n}"},
    "read.list_header": {
        "en": "{total} task(s) of your project match ({filters}); by status: {counts}; newest first, showing {shown}:",
        "zh": "本项目有 {total} 个任务匹配（{filters}）；各状态计数：{counts}；按新建倒序，显示 {shown} 个：",
    },
    "read.list_label": {
        "en": "task list: id, status, start of the prompt",
        "zh": "任务列表：id、状态、prompt 开头",
    },
    "read.list_rows": {"en": "{framed}", "zh": "{framed}"},
    "read.list_more": {
        "en": "{n} more not shown (narrow with status or q, or raise limit up to 50)",
        "zh": "还有 {n} 个未显示（可用 status 或 q 缩小范围，或把 limit 调高到 50）",
    },
    # ---- task-cost ----
    "read.cost": {
        "en": "cost of task {id}: {dollars}; tokens: {actual} actual, {estimated} estimated; {rounds} round(s)",
        "zh": "任务 {id} 的费用：{dollars}；token：实际 {actual}，估算 {estimated}；{rounds} 轮",
    },
    "read.cost_usd": {
        "en": "{usd} over {rows} priced row(s)",
        "zh": "{usd}（{rows} 条有价记录）",
    },
    "read.cost_no_priced": {
        "en": "dollars unknown (no priced rows)",
        "zh": "美元未知（没有有价记录）",
    },
    "read.cost_unpriced": {
        "en": "{tokens} actual token(s) have no price; they are NOT counted as $0",
        "zh": "{tokens} 个实际 token 没有价格；它们不按 0 美元计",
    },
    # ---- quota-status ----
    "read.quota": {
        "en": "quota of {user}: total {total}, used {used}, remaining {remaining}; unpriced actual tokens: {unpriced}",
        "zh": "{user} 的配额：总额 {total}，已用 {used}，剩余 {remaining}；无价实际 token：{unpriced}",
    },
    "read.quota_unlimited": {
        "en": "quota of {user}: total unlimited, used {used}, remaining unlimited; unpriced actual tokens: {unpriced}",
        "zh": "{user} 的配额：总额不限，已用 {used}，剩余不限；无价实际 token：{unpriced}",
    },
    "read.quota_no_record": {
        "en": "quota of {user}: no quota record, so no limit applies; unpriced actual tokens: {unpriced}",
        "zh": "{user} 的配额：没有配额记录，因此不设上限；无价实际 token：{unpriced}",
    },
    "read.quota_no_user": {
        "en": "neither you nor your parent task has a creator, so there is no quota to report",
        "zh": "你和你的父任务都没有创建人，无配额可报告",
    },
    "read.quota_ignored_fields": {
        "en": "fields ignored: {fields} (quota-status takes no fields; it always reports your creator's quota)",
        "zh": "已忽略字段：{fields}（quota-status 不接受任何字段，总是报告你的创建人的配额）",
    },
}
