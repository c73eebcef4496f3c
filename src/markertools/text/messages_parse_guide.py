# Owns: catalogue rows (en + zh) for the agent guide generated from the kind table:
# what each kind does ("parse.sum.<kind>"), what each field means ("parse.doc.*"),
# and the guide's framing ("parse.guide.*"). Merged into `messages_parse.MESSAGES`.
from __future__ import annotations

from typing import Final

_SUMMARIES: Final[dict[str, dict[str, str]]] = {
    "parse.sum.task-create": {
        "en": "start a new, independent task in this project (it does not see this conversation)",
        "zh": "在本项目中新建一个独立任务（它看不到本会话的内容）",
    },
    "parse.sum.todo-create": {"en": "add a todo to this project", "zh": "在本项目中新建一条待办"},
    "parse.sum.todo-update": {
        "en": "change a todo of this project (most often its status)",
        "zh": "修改本项目的一条待办（最常用的是改状态）",
    },
    "parse.sum.automation-create": {
        "en": "register an automation that runs a prompt on a schedule",
        "zh": "登记一个按计划运行提示词的自动化",
    },
    "parse.sum.task-cancel": {
        "en": "cancel a queued or running task you spawned (directly or further down) or that has your creator",
        "zh": "取消一个排队中或运行中的任务（须是你派生链上的任务，或与你同一创建人）",
    },
    "parse.sum.task-retry": {
        "en": "re-queue a failed, interrupted or merge-failed task (prompt and model kept)",
        "zh": "把失败、已中断或合并失败的任务重新排队（保留提示词与模型）",
    },
    "parse.sum.approval-answer": {
        "en": "approve or deny a pending approval request of a task you spawned (directly or further down) with your creator",
        "zh": "批准或拒绝你派生链上（且同一创建人）的任务提出的待批准请求",
    },
    "parse.sum.task-list": {
        "en": "list this project's tasks, newest first, with counts per status",
        "zh": "列出本项目的任务（新建倒序），附各状态计数",
    },
    "parse.sum.todo-list": {
        "en": "list this project's todos (unfinished ones unless a status is given)",
        "zh": "列出本项目的待办（未指定状态时只列未完成的）",
    },
    "parse.sum.task-cost": {
        "en": "show what a task has cost (dollars, tokens, rounds)",
        "zh": "查看一个任务的费用（美元、token、轮次）",
    },
    "parse.sum.quota-status": {
        "en": "show your creator's quota: total, used, remaining",
        "zh": "查看你的创建人的配额：总额、已用、剩余",
    },
    "parse.sum.task-files": {
        "en": "list or read files in the worktree of a task you spawned or that has your creator",
        "zh": "列出或读取你派生的（或同一创建人的）任务工作区中的文件",
    },
    "parse.sum.task-poll": {
        "en": "read a task's status and latest output, optionally waiting for it to finish",
        "zh": "读取一个任务的状态与最新输出，可选择等待它结束",
    },
    "parse.sum.wait-threads": {
        "en": "wait for several tasks at once and read each one's output",
        "zh": "同时等待多个任务，并读取每个任务的输出",
    },
    "parse.sum.goal-convert": {
        "en": "turn this conversation into a goal task that keeps working until the goal is reached",
        "zh": "把本会话转为 goal 任务，持续工作直到达成目标",
    },
}

_DOCS: Final[dict[str, dict[str, str]]] = {
    "parse.doc.task_id": {"en": "the target task", "zh": "目标任务"},
    "parse.doc.create_prompt": {
        "en": "everything the new task needs to know; it starts without this conversation",
        "zh": "新任务需要知道的全部内容；它不会带上本会话的历史",
    },
    "parse.doc.create_name": {
        "en": 'a short label for the report and for "@NAME" references in this turn; not stored',
        "zh": '简短标签，用于报告和本轮的 "@NAME" 引用；不落库',
    },
    "parse.doc.model": {
        "en": "the model to run it with; default: the usual model",
        "zh": "运行所用模型；缺省为常规模型",
    },
    "parse.doc.effort": {
        "en": "reasoning effort; default: the usual effort",
        "zh": "推理强度；缺省为常规强度",
    },
    "parse.doc.executor": {
        "en": "where it runs; default: the same executor as you",
        "zh": "在哪里运行；缺省与你相同的执行器",
    },
    "parse.doc.todo_id": {"en": "the todo to change", "zh": "要修改的待办"},
    "parse.doc.todo_title": {"en": "the todo's title", "zh": "待办标题"},
    "parse.doc.todo_description": {"en": "details", "zh": "详细说明"},
    "parse.doc.todo_status": {"en": "the todo's status", "zh": "待办状态"},
    "parse.doc.todo_priority": {"en": "the todo's priority", "zh": "待办优先级"},
    "parse.doc.due_at": {"en": "when it is due", "zh": "截止时间"},
    "parse.doc.todo_task_id": {
        "en": "a task of this project the todo is about",
        "zh": "该待办关联的本项目任务",
    },
    "parse.doc.sort_order": {
        "en": "position in lists (smaller first)",
        "zh": "列表中的位置（小的在前）",
    },
    "parse.doc.auto_prompt": {"en": "what each run should do", "zh": "每次运行要做的事"},
    "parse.doc.auto_name": {
        "en": "the automation's name, unique among the project's active automations; default: generated",
        "zh": "自动化名称，在本项目启用中的自动化里须唯一；缺省自动生成",
    },
    "parse.doc.auto_interval": {
        "en": "seconds between runs (60 to 30 days; outside that the block is skipped, not clamped)",
        "zh": "两次运行的间隔秒数（60 秒到 30 天；超出则整块跳过，不钳制）",
    },
    "parse.doc.first_run_at": {
        "en": 'when the first run is due; default: at once. For "every day at 9" give the next 9:00 and interval_seconds 86400. A time in the past is rejected',
        "zh": "首次运行时间；缺省为立即到期。“每天 9 点”要写下一个 9 点并配 interval_seconds 86400。已过去的时间会被拒绝",
    },
    "parse.doc.once": {"en": "run only once", "zh": "只运行一次"},
    "parse.doc.bind": {
        "en": 'null or "cron": each run is a new task; "heartbeat": each run wakes this conversation',
        "zh": 'null 或 "cron"：每次运行是一个新任务；"heartbeat"：每次运行唤醒本会话',
    },
    "parse.doc.repo_url": {"en": "the repository the runs work on", "zh": "运行所针对的仓库"},
    "parse.doc.task_status": {
        "en": "only tasks with this status; default: all",
        "zh": "只列此状态的任务；缺省为全部",
    },
    "parse.doc.task_q": {
        "en": "text the prompt must contain (case-insensitive)",
        "zh": "提示词须包含的文本（不区分大小写）",
    },
    "parse.doc.limit": {"en": "how many tasks to list", "zh": "列出多少个任务"},
    "parse.doc.todo_list_status": {
        "en": "only todos with this status; default: the unfinished ones (pending, in_progress, blocked)",
        "zh": "只列此状态的待办；缺省为未完成的（pending、in_progress、blocked）",
    },
    "parse.doc.todo_q": {
        "en": "text the title or description must contain (case-insensitive)",
        "zh": "标题或描述须包含的文本（不区分大小写）",
    },
    "parse.doc.path": {
        "en": "a relative path inside that task's worktree; absent or empty: list the top level",
        "zh": "该任务工作区内的相对路径；不填或为空则列出顶层",
    },
    "parse.doc.interval": {"en": "seconds between reads", "zh": "两次读取之间的秒数"},
    "parse.doc.poll_timeout": {
        "en": "how long to keep reading until the task finishes, in seconds; 0 = one immediate snapshot",
        "zh": "持续读取直到任务结束的最长秒数；0 表示立即读一次快照",
    },
    "parse.doc.wait_timeout": {
        "en": "how long to wait at most, in seconds",
        "zh": "最长等待秒数",
    },
    "parse.doc.chars": {
        "en": "how many characters of the task's output to show (its last ones)",
        "zh": "显示任务输出的多少个字符（取末尾）",
    },
    "parse.doc.wait_seconds": {
        "en": "shorthand: sets both interval_seconds and timeout_seconds to this value",
        "zh": "简写：把 interval_seconds 与 timeout_seconds 都设为该值",
    },
    "parse.doc.task_ids": {
        "en": "the tasks to wait for; repeated ids count once, at most 8 are waited for",
        "zh": "要等待的任务；重复 id 只算一次，最多等待 8 个",
    },
    "parse.doc.goal": {
        "en": "the goal; after this turn's report, this conversation works on it until it is reached",
        "zh": "目标；本轮报告之后，本会话会一直为它工作直到达成",
    },
    "parse.doc.goal_forbidden": {"en": "not accepted here", "zh": "此处不接受"},
    "parse.doc.approval_id": {
        "en": "the request's id, as a task-poll or wait-threads result shows it",
        "zh": "请求的 id，即 task-poll 或 wait-threads 结果中显示的 id",
    },
    "parse.doc.approval_decision": {
        "en": "approve lets the task's agent go ahead; deny refuses",
        "zh": "approve 让该任务的代理继续执行；deny 拒绝",
    },
    "parse.doc.approval_reason": {
        "en": "why, in a sentence; the task's agent is told",
        "zh": "一句话说明理由；会告知该任务的代理",
    },
}

_GUIDE: Final[dict[str, dict[str, str]]] = {
    "parse.guide.title": {"en": "# Marker tools", "zh": "# 标记工具"},
    "parse.guide.intro": {
        "en": (
            "You can ask the system to act by writing marker blocks in your answer: a fenced "
            "code block whose info string is exactly the kind name, holding one JSON object.\n"
            "\n"
            "- Blocks run only after your turn completes successfully. Their results come back as "
            "one report message at the start of your next turn; nothing is returned within the "
            "same turn.\n"
            "- Within a turn, blocks run in this order: {order}; blocks of one kind in the order "
            "you wrote them.\n"
            "- The body must be one strict JSON object: no comments, no trailing commas, no "
            'NaN/Infinity, no duplicate keys, at most 32 levels deep. null means "not given" (the '
            "default applies). Unknown fields are ignored. Invalid blocks are skipped, with the "
            "reason in the report.\n"
            "- A block inside a block quote, another code block or an HTML comment never runs, so "
            "quote an example to show it without running it. A block must be closed by its own "
            "fence.\n"
            '- A task id may be written "@NAME": the task created in this same turn by the '
            'task-create block with that "name".\n'
            "- Each kind runs at most the number of blocks per turn given below; extra blocks are "
            "ignored."
        ),
        "zh": (
            "你可以在回答中写标记块来请求系统执行操作：一个围栏代码块，信息串恰好是类型名，内容是"
            "一个 JSON 对象。\n"
            "\n"
            "- 只有本轮成功完成后才执行这些块。结果会在你下一轮开始时以一条报告消息返回；同一轮内"
            "不会返回任何结果。\n"
            "- 同一轮内按以下顺序执行：{order}；同类型的块按书写顺序执行。\n"
            "- 块体必须是一个严格的 JSON 对象：不能有注释、尾随逗号、NaN/Infinity、重复键，嵌套"
            "不超过 32 层。null 表示“未提供”（使用缺省值）。未知字段会被忽略。非法的块会被跳过，"
            "原因写在报告里。\n"
            "- 位于引用块、其他代码块或 HTML 注释中的块永远不会执行，所以想展示示例而不执行时，请用"
            "引用。块必须由自己的围栏闭合。\n"
            '- 任务 id 可以写成 "@NAME"：指本轮中 name 为该值的 task-create 块所创建的任务。\n'
            "- 每种类型每轮最多执行下文给出的块数；多出的块会被忽略。"
        ),
    },
    "parse.guide.heading": {
        "en": "## {kind} — {summary}",
        "zh": "## {kind} — {summary}",
    },
    "parse.guide.cap": {
        "en": "At most {cap} per turn.",
        "zh": "每轮最多 {cap} 个。",
    },
    "parse.guide.aliases": {
        "en": "Also accepted as: {names} (they count together).",
        "zh": "也可写作：{names}（合并计数）。",
    },
    "parse.guide.fields": {"en": "Fields:", "zh": "字段："},
    "parse.guide.no_fields": {
        "en": "No fields: write an empty object {{}}; any field given is ignored.",
        "zh": "没有字段：写一个空对象 {{}}；写了的字段都会被忽略。",
    },
    "parse.guide.required": {"en": "required", "zh": "必填"},
    "parse.guide.optional": {"en": "optional", "zh": "可选"},
    "parse.guide.default": {"en": "optional, default {default}", "zh": "可选，缺省 {default}"},
    "parse.guide.field_line": {
        "en": "- `{name}` ({status}): {doc}. Value: {exp}.",
        "zh": "- `{name}`（{status}）：{doc}。取值：{exp}。",
    },
    "parse.guide.field_aliases": {
        "en": "  Also spelled: {names} (give only one).",
        "zh": "  也可写作：{names}（只写一个）。",
    },
    "parse.guide.example": {"en": "Example:", "zh": "示例："},
    "parse.guide.note.todo-update": {
        "en": "Give `id` and at least one field to change; fields left out (or null) stay as they are. Todos cannot be deleted with a marker.",
        "zh": "写上 `id` 并至少给出一个要改的字段；未写（或为 null）的字段保持不变。不能用标记删除待办。",
    },
    "parse.guide.note.goal-convert": {
        "en": "`verify_command` and `goal_max_rounds` are not accepted: a block carrying either is skipped.",
        "zh": "不接受 `verify_command` 与 `goal_max_rounds`：带有其中任一字段的块会被跳过。",
    },
    "parse.guide.note.approval-answer": {
        "en": "Only a task above the requesting task in its lineage, with the same creator, may answer; never your own request. The first answer wins; a request that expired, was answered already or whose task stopped running is refused, and no answer approves what a deny rule of the project covers.",
        "zh": "只有请求任务派生链上方、且同一创建人的任务可以回答；不能回答自己的请求。以第一个回答为准；已过期、已被回答或其任务已不在运行的请求会被拒绝，任何回答都不能批准项目拒绝规则所覆盖的请求。",
    },
    "parse.guide.note.automation-create": {
        "en": "Creating only registers the automation; its runs start when they are due.",
        "zh": "创建只是登记自动化定义；到期后才会运行。",
    },
}

MESSAGES: Final[dict[str, dict[str, str]]] = {**_SUMMARIES, **_DOCS, **_GUIDE}
