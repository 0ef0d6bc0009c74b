# Sourced by the benchmark scripts: freeports N prints N distinct free loopback ports, bound all at
# once. Two single-port lookups in a row can get the same port (the first is free again as soon as
# its socket closes), so a script that needs several before it starts anything asks for them in
# one call: ports=$(freeports 2); read -r a b <<<"$ports". freeport is freeports 1.
freeports() {
  python3 -c 'import socket,sys; s=[socket.socket() for _ in range(int(sys.argv[1]))]; [x.bind(("127.0.0.1",0)) for x in s]; print(" ".join(str(x.getsockname()[1]) for x in s))' "$1" ||
    { echo "$(basename "$0"): no free loopback ports (python3 failed)" >&2; return 1; }
}
freeport() { freeports 1; }
