#!/bin/sh
# As the official redis image's entrypoint: redis-server without a config file (alone, or
# with options only, as docker-compose.yml starts it) runs with protected mode off.
if [ "$1" = redis-server ]; then
  case "${2:--}" in -*) set -- "$@" --protected-mode no ;; esac
fi
exec "$@"
