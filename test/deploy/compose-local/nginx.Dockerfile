# Stand-in for nginx:1.28-alpine: nginx from Debian unstable (deploy/compose/nginx.conf needs
# 1.27.3 or later for `resolve` in an upstream block; Debian 13 has 1.26). Not checking the
# Release file's date: a mirror that is a snapshot serves an unstable whose date has passed.
ARG BASE=tollgate-local/debian:trixie
FROM ${BASE}
RUN echo 'deb [check-valid-until=no] http://deb.debian.org/debian sid main' >/etc/apt/sources.list.d/sid.list \
 && apt-get update \
 && apt-get install -y --no-install-recommends -t sid nginx \
 && rm -rf /var/lib/apt/lists/* \
 && ln -sf /dev/stderr /var/log/nginx/error.log \
 && ln -sf /dev/stdout /var/log/nginx/access.log \
 && nginx -v
EXPOSE 8080
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
