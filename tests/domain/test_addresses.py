from stackselect_domain.addresses import is_loopback_host


def test_localhost_and_loopback_addresses_name_this_machine():
    for host in ("localhost", "LOCALHOST", "127.0.0.1", "127.8.9.10", "::1", "[::1]"):
        assert is_loopback_host(host), host


def test_other_hosts_and_no_host_do_not_name_this_machine():
    for host in (None, "", "10.0.0.5", "gpu-01.internal", "::2", "localhost.example.com"):
        assert not is_loopback_host(host), host
