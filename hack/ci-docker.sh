#!/usr/bin/env bash
# ci-docker.sh start|stop: a Docker engine for one CI run, on a machine that has only a docker
# client (.ci/run calls it as root when no engine answers). start installs Debian's docker.io and
# debootstrap (what make e2e-kind needs: the kind node image is built with debootstrap, from the
# mirror apt is configured with) and starts dockerd; stop stops that dockerd and what it ran.
set -euo pipefail
RUN=${CI_DOCKER_DIR:-/tmp/jobset-addons-ci-docker}
case ${1:-} in
start)
	mkdir -p "$RUN"
	if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
		echo "ci-docker: apt-get install docker.io debootstrap"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >"$RUN/apt.log" 2>&1 || { tail -20 "$RUN/apt.log"; exit 1; }
		apt-get install -y -qq docker.io debootstrap >>"$RUN/apt.log" 2>&1 || { tail -20 "$RUN/apt.log"; exit 1; }
	fi
	dockerd --pidfile "$RUN/dockerd.pid" >"$RUN/dockerd.log" 2>&1 &
	for _ in $(seq 60); do
		if docker info >/dev/null 2>&1; then
			echo "ci-docker: dockerd $(docker version --format '{{.Server.Version}}') running (log $RUN/dockerd.log)"
			exit 0
		fi
		sleep 1
	done
	echo "ci-docker: dockerd did not answer within 60s:"
	tail -20 "$RUN/dockerd.log"
	exit 1
	;;
stop)
	[[ -f $RUN/dockerd.pid ]] || exit 0
	pid=$(cat "$RUN/dockerd.pid")
	ids=$(docker ps -aq 2>/dev/null || true)
	[[ -z $ids ]] || docker rm -f $ids >/dev/null 2>&1 || true
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
	kill -9 "$pid" 2>/dev/null || true
	pkill -f 'containerd --config /var/run/docker/containerd' 2>/dev/null || true
	rm -f "$RUN/dockerd.pid"
	echo "ci-docker: dockerd stopped"
	;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
