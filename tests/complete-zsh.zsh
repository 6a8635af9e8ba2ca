#!/bin/zsh -f
# complete-zsh.zsh DIR 'COMMAND LINE': the words zsh's completion offers after typing the line and
# a tab, one per line, with the completion functions of DIR first in $fpath. It runs an
# interactive zsh on a pseudo-terminal (zpty) and records what compadd is given; the caller
# bounds its time.
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT=''; RPROMPT=''; unsetopt beep"
zpty -w z "fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "compadd() { if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd \"\$@\"; return; fi; local -a __h; builtin compadd -A __h \"\$@\"; (( \$#__h )) || return 1; print -rl -- \"<c>\"\${^__h}\"</c>\"; builtin compadd \"\$@\" }"
zpty -w z "zstyle ':completion:*' list-prompt ''; zstyle ':completion:*' select-prompt ''"
zpty -w z 'print SETUP-$((6*7))'
zpty -r z setup '*SETUP-42*'
# the line and a tab; then, once completion is over, kill the line and print a mark (only its
# output, not its echo, holds "END-42")
zpty -w -n z "$2"$'\t'
zpty -w -n z $'\x15''print END-$((6*7))'$'\n'
zpty -r z out '*END-42*'
print -r -- "$out" | grep -ao '<c>[^<]*</c>' | sed 's/<c>//; s/<\/c>//' | sort -u
zpty -d z
