# Stand-in for redis:7-alpine: Debian 13's redis-server. As in the official image, the command
# is redis-server's arguments, and a server started without a config file (docker-compose.yml's
# command names none) gets --protected-mode no: protected mode would refuse the other
# containers, which connect without a password.
ARG BASE=tollgate-local/debian:trixie
FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server redis-tools \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown redis:redis /data
COPY redis-entrypoint.sh /usr/local/bin/redis-entrypoint.sh
WORKDIR /data
USER redis
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/redis-entrypoint.sh"]
CMD ["redis-server"]
