# Stand-in for postgres:16-alpine: Debian 13's PostgreSQL 17, started by an entrypoint that
# reads POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB as the official image does.
ARG BASE=tollgate-local/debian:trixie
FROM ${BASE}
# No cluster of Debian's own: the entrypoint makes one in PGDATA.
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-common \
 && sed -ri 's/#?(create_main_cluster) .*$/\1 = false/' /etc/postgresql-common/createcluster.conf \
 && apt-get install -y --no-install-recommends postgresql-17 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/17/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
VOLUME /var/lib/postgresql/data
EXPOSE 5432
# Fast shutdown, as the official image.
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
