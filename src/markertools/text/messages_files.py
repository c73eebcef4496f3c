# Owns: catalogue rows for the files area (en + zh). Keys are prefixed "files.".
# Used by the task-files gate and handler (handlers.files), path validation (paths) and
# the worktree adapter (markertools_adapters.worktrees / _fsread).
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    # ---- path validation (FIL-4) ------------------------------------------------------
    "files.path_nul": {
        "en": "path {path} contains a NUL byte; give a plain relative path",
        "zh": "路径 {path} 含 NUL 字节；请给出普通的相对路径",
    },
    "files.path_too_long": {
        "en": "path is {chars} characters long; at most {limit} are accepted",
        "zh": "路径长 {chars} 个字符；最多接受 {limit} 个",
    },
    "files.path_unc": {
        "en": "path {path} is a UNC / network path; give a path relative to the task's worktree",
        "zh": "路径 {path} 是 UNC / 网络路径；请给出相对于任务 worktree 的路径",
    },
    "files.path_absolute": {
        "en": "path {path} is absolute; give a path relative to the task's worktree (e.g. src/main.py)",
        "zh": "路径 {path} 是绝对路径；请给出相对于任务 worktree 的路径（如 src/main.py）",
    },
    "files.path_drive": {
        "en": "path {path} starts with a drive letter; give a path relative to the task's worktree",
        "zh": "路径 {path} 以盘符开头；请给出相对于任务 worktree 的路径",
    },
    "files.path_dotdot": {
        "en": "path {path} contains a '..' segment; paths must stay inside the worktree",
        "zh": "路径 {path} 含 “..” 段；路径必须留在 worktree 之内",
    },
    # ---- gate (FIL-2) ---------------------------------------------------------------
    "files.target_missing": {
        "en": "task {task} does not exist",
        "zh": "任务 {task} 不存在",
    },
    "files.other_project": {
        "en": "task {task} belongs to another project; task-files reads only tasks of your project",
        "zh": "任务 {task} 属于其他项目；task-files 只能读本项目的任务",
    },
    "files.not_related": {
        "en": (
            "task {task} is neither in your lineage (spawned by you or your descendants) "
            "nor created by the same user as you; its files cannot be read"
        ),
        "zh": "任务 {task} 既不在你的派生链内（由你或你的后代派生），也不是同一创建人创建；不能读它的文件",
    },
    "files.permission_denied": {
        "en": "your creator lacks the 'read' permission on this project",
        "zh": "你的创建人在本项目没有 read 权限",
    },
    "files.permission_failed": {
        "en": "the permission lookup for 'read' failed ({error}); task-files fails closed",
        "zh": "read 权限查询失败（{error}）；task-files 按拒绝处理",
    },
    "files.cloud_executor": {
        "en": "task {task} runs on the cloud executor; its files are not on this machine",
        "zh": "任务 {task} 在 cloud 执行器上运行；它的文件不在本机",
    },
    "files.other_host": {
        "en": "task {task}'s worktree is on host {host}, not on this host ({local}); its files are not on this machine",
        "zh": "任务 {task} 的 worktree 在主机 {host} 上，不在本机（{local}）；它的文件不在本机",
    },
    "files.no_resolver": {
        "en": "no worktree resolver is configured in this worker, so task files cannot be read",
        "zh": "本 worker 未配置 worktree 解析器，无法读取任务文件",
    },
    # ---- worktree location (FIL-5) ------------------------------------------------------
    "files.task_id_unusable": {
        "en": "the task id cannot name a worktree directory (it {problem}); no local worktree",
        "zh": "该任务 id 不能用作 worktree 目录名（{problem}）；没有本地 worktree",
    },
    "files.no_local_worktree": {
        "en": "the task has no local worktree (looked for {looked} under the worktree root); nothing to read",
        "zh": "该任务没有本地 worktree（在 worktree 根目录下查找了 {looked}）；没有可读内容",
    },
    "files.worktree_not_own": {
        "en": "the task's recorded worktree {path} is not inside its own directory ({own}); refusing to read it",
        "zh": "该任务记录的 worktree {path} 不在它自己的目录（{own}）之内；拒绝读取",
    },
    "files.worktree_outside_root": {
        "en": "the task's recorded worktree {path} is outside the configured worktree root; refusing to read it",
        "zh": "该任务记录的 worktree {path} 在配置的 worktree 根目录之外；拒绝读取",
    },
    "files.worktree_invalid": {
        "en": "the task's recorded worktree {path} is not a plain path (it has a '..' segment, a NUL byte or a drive/UNC prefix); refusing to read it",
        "zh": "该任务记录的 worktree {path} 不是普通路径（含 “..” 段、NUL 字节或盘符/UNC 前缀）；拒绝读取",
    },
    "files.worktree_not_dir": {
        "en": "{path} under the worktree root is a symbolic link or not a directory; refusing to use it as a worktree",
        "zh": "worktree 根目录下的 {path} 是符号链接或不是目录；拒绝把它当作 worktree",
    },
    "files.root_unavailable": {
        "en": "the worktree root cannot be opened ({error})",
        "zh": "无法打开 worktree 根目录（{error}）",
    },
    # ---- reading inside the worktree (FIL-3 / FIL-4) ------------------------------------
    "files.not_found": {
        "en": "{path} does not exist in the task's worktree",
        "zh": "任务的 worktree 中不存在 {path}",
    },
    "files.not_a_directory": {
        "en": "cannot read {path}: {component} is not a directory",
        "zh": "无法读取 {path}：{component} 不是目录",
    },
    "files.symlink_outside": {
        "en": "{path} resolves (through a symbolic link) outside the task's worktree; refusing to read it",
        "zh": "{path} 经符号链接解析后位于任务 worktree 之外；拒绝读取",
    },
    "files.symlink_loop": {
        "en": "{path} passes through more than {limit} symbolic links (a link loop?); refusing to read it",
        "zh": "{path} 经过超过 {limit} 个符号链接（可能是链接循环）；拒绝读取",
    },
    "files.too_deep": {
        "en": "{path} descends through more than {limit} directories; refusing to read it",
        "zh": "{path} 经过超过 {limit} 层目录；拒绝读取",
    },
    "files.changed": {
        "en": "{path} changed while it was being opened (a component was replaced, e.g. by a symbolic link); nothing was read, try again",
        "zh": "{path} 在打开过程中被改动（某一段被替换，例如换成符号链接）；未读取任何内容，请重试",
    },
    "files.not_regular": {
        "en": "{path} is {what}, not a regular file; only regular files can be read and directories listed",
        "zh": "{path} 是{what}，不是普通文件；只能读取普通文件、列出目录",
    },
    "files.kind_fifo": {"en": "a FIFO (named pipe)", "zh": "FIFO（命名管道）"},
    "files.kind_char_device": {"en": "a character device", "zh": "字符设备"},
    "files.kind_block_device": {"en": "a block device", "zh": "块设备"},
    "files.kind_socket": {"en": "a socket", "zh": "套接字"},
    "files.kind_other": {"en": "a special file", "zh": "特殊文件"},
    "files.not_text": {
        "en": "{path} is not shown: {why}; only UTF-8 text files without NUL bytes can be read",
        "zh": "未显示 {path}：{why}；只能读取不含 NUL 字节的 UTF-8 文本文件",
    },
    "files.why_nul": {
        "en": "it looks binary (NUL byte at byte offset {offset})",
        "zh": "看起来是二进制文件（字节偏移 {offset} 处有 NUL 字节）",
    },
    "files.why_utf8": {
        "en": "it is not valid UTF-8 (invalid byte sequence at byte offset {offset})",
        "zh": "它不是有效的 UTF-8（字节偏移 {offset} 处有无效字节序列）",
    },
    "files.why_utf8_end": {
        "en": "it is not valid UTF-8 (it ends inside a multibyte character)",
        "zh": "它不是有效的 UTF-8（文件在一个多字节字符中间结束）",
    },
    "files.os_error": {
        "en": "{path} could not be read: {error}",
        "zh": "无法读取 {path}：{error}",
    },
    # ---- results -------------------------------------------------------------------------
    "files.top_level": {"en": "the top level", "zh": "顶层"},
    "files.label_listing": {
        "en": "directory listing of {dir} in the worktree of task {task}",
        "zh": "任务 {task} 的 worktree 中 {dir} 的目录列表",
    },
    "files.label_file": {
        "en": "contents of file {path} in the worktree of task {task}",
        "zh": "任务 {task} 的 worktree 中文件 {path} 的内容",
    },
    "files.listing_empty": {
        "en": "{dir} of task {task}'s worktree is empty",
        "zh": "任务 {task} 的 worktree 中 {dir} 为空",
    },
    "files.listing": {
        "en": "{dir} of task {task}'s worktree: {shown} entries shown (sorted by name, directories end with /){more}\n{data}",
        "zh": "任务 {task} 的 worktree 中 {dir}：显示 {shown} 项（按名称排序，目录以 / 结尾）{more}\n{data}",
    },
    "files.listing_more": {
        "en": "; {n} more entries not shown",
        "zh": "；另有 {n} 项未显示",
    },
    "files.file": {
        "en": "file {path} of task {task}: {size}\n{data}",
        "zh": "任务 {task} 的文件 {path}：{size}\n{data}",
    },
    "files.size_full": {
        "en": "{chars} characters, shown in full",
        "zh": "共 {chars} 个字符，已完整显示",
    },
    "files.truncated_of": {
        "en": "truncated: only the first {shown} of {total} characters are shown",
        "zh": "已截断：{total} 个字符中只显示前 {shown} 个",
    },
    "files.truncated_bytes": {
        "en": "truncated: only the first {shown} characters are shown (the file is {bytes} bytes)",
        "zh": "已截断：只显示前 {shown} 个字符（文件共 {bytes} 字节）",
    },
    "files.truncated": {
        "en": "truncated: only the first {shown} characters are shown",
        "zh": "已截断：只显示前 {shown} 个字符",
    },
}
