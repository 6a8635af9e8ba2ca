#!/bin/bash
# complete-bash.sh COMPLETION-FILE WORD...: the words bash's completion of sectreectl offers for
# the command line WORD... (the last one is being completed; give "" for a new word), one per
# line. The words are taken as bash splits them, '=' on its own included.
source "$1" || exit 1
shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
_sectreectl sectreectl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
