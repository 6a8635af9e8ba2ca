#!/bin/zsh -f
# complete-zsh.zsh DIR 'COMMAND LINE': the words zsh's completion offers after typing the line and
# a tab, one per line, with the completion functions of DIR first in $fpath. It runs an
# interactive zsh on a pseudo-terminal (zpty) and records what compadd is given. The tab is bound
# to a widget that completes and then prints a mark: the line is killed only once the mark came,
# so that nothing is typed ahead of a completion still running on a loaded machine (zsh cuts a
# completion short when keys are pending). No fixed waits; the caller bounds its time.
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT=''; RPROMPT=''; unsetopt beep; LISTMAX=1000000"
zpty -w z "fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "compadd() { if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd \"\$@\"; return; fi; local -a __h; builtin compadd -A __h \"\$@\"; (( \$#__h )) || return 1; print -rl -- \"<c>\"\${^__h}\"</c>\"; builtin compadd \"\$@\" }"
zpty -w z "zstyle ':completion:*' list-prompt ''; zstyle ':completion:*' select-prompt ''"
zpty -w z "zle -C __test-complete .complete-word _main_complete; __test-tab() { zle __test-complete; print -r -- DONE-\$((6*7)) }; zle -N __test-tab; bindkey '^I' __test-tab"
zpty -w z 'print SETUP-$((6*7))'
zpty -r z setup '*SETUP-42*'
# the line and a tab; the mark (only its output, not an echo, holds "DONE-42") ends the completion
zpty -w -n z "$2"$'\t'
zpty -r z out '*DONE-42*'
print -r -- "$out" | grep -ao '<c>[^<]*</c>' | sed 's/<c>//; s/<\/c>//' | sort -u
zpty -d z
