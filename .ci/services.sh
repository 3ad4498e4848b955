#!/usr/bin/env bash
# Make sure the database servers the store tests use answer on loopback (docs/stores.md):
#   PostgreSQL 127.0.0.1:5432  (trust for 127.0.0.1, database "test")
#   MariaDB    127.0.0.1:3306  (root without a password over TCP, database "test")
#   Redis      127.0.0.1:6379
# Each one that does not answer is installed (Debian packages) if missing, started, and given the
# database/permissions above. Idempotent; when all three answer it only checks (well under a second).
# Needs root (or sudo) only when something has to be installed or started.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
APT_UPDATED=0

say() { echo "services: $*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

apt_install() {
	if [ "$APT_UPDATED" -eq 0 ]; then
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
		APT_UPDATED=1
	fi
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

start_service() {
	# containers have no systemd: try the daemons' own start commands, then the SysV scripts
	case "$1" in
	postgresql)
		$SUDO pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start \
			>/dev/null 2>&1 && return 0 ;;
	mariadb)
		$SUDO start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd >/dev/null 2>&1 \
			&& return 0 ;;
	redis-server)
		$SUDO redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
			>/dev/null 2>&1 && return 0 ;;
	esac
	$SUDO service "$1" start >/dev/null 2>&1 || $SUDO /etc/init.d/"$1" start >/dev/null
}

wait_port() {
	for _ in $(seq 1 60); do
		port_open "$1" && return 0
		sleep 0.5
	done
	say "nothing answers on 127.0.0.1:$1 after starting $2"
	return 1
}

# ----- PostgreSQL -------------------------------------------------------------------------------
pg_ok() { command -v psql >/dev/null && psql -h 127.0.0.1 -U postgres -d test -qAtc 'select 1' >/dev/null 2>&1; }

if ! pg_ok; then
	say "PostgreSQL does not answer on 127.0.0.1:5432; setting it up"
	command -v pg_ctlcluster >/dev/null || apt_install postgresql postgresql-client
	port_open 5432 || start_service postgresql
	wait_port 5432 PostgreSQL
	hba=$($SUDO -u postgres psql -qAtc 'show hba_file' 2>/dev/null || true)
	if [ -n "$hba" ] && ! $SUDO grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
		# trust loopback: the tests connect as postgres without a password
		$SUDO sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
		$SUDO -u postgres psql -qAtc 'select pg_reload_conf()' >/dev/null
	fi
	if ! psql -h 127.0.0.1 -U postgres -qAtc "select 1 from pg_database where datname='test'" | grep -q 1; then
		psql -h 127.0.0.1 -U postgres -qc 'create database test' >/dev/null
	fi
	pg_ok || { say "PostgreSQL still refuses the test connection"; exit 1; }
fi

# ----- MariaDB ----------------------------------------------------------------------------------
my_ok() { command -v mysql >/dev/null && mysql -h 127.0.0.1 -P 3306 -uroot -e 'select 1' test >/dev/null 2>&1; }

if ! my_ok; then
	say "MariaDB does not answer on 127.0.0.1:3306; setting it up"
	command -v mariadbd >/dev/null || command -v mysqld >/dev/null || apt_install mariadb-server mariadb-client
	port_open 3306 || start_service mariadb
	wait_port 3306 MariaDB
	# as the local admin over the socket: root without a password from 127.0.0.1, and a test database
	$SUDO mysql -uroot <<-'SQL'
		CREATE DATABASE IF NOT EXISTS test;
		CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
		GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
		FLUSH PRIVILEGES;
	SQL
	my_ok || { say "MariaDB still refuses the test connection"; exit 1; }
fi

# ----- Redis ------------------------------------------------------------------------------------
redis_ok() { command -v redis-cli >/dev/null && [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }

if ! redis_ok; then
	say "Redis does not answer on 127.0.0.1:6379; setting it up"
	command -v redis-server >/dev/null || apt_install redis-server
	port_open 6379 || start_service redis-server
	wait_port 6379 Redis
	redis_ok || { say "Redis still does not answer PING"; exit 1; }
fi
