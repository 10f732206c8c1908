package provider

import (
	"net"
	"net/url"
	"slices"
)

// sameEndpoint reports whether two https URLs name the same listener: the
// same port and a host that resolves to a common address.
func sameEndpoint(a, b string) (bool, error) {
	ua, err := url.Parse(a)
	if err != nil {
		return false, err
	}
	ub, err := url.Parse(b)
	if err != nil {
		return false, err
	}
	if portOf(ua) != portOf(ub) {
		return false, nil
	}
	if ua.Hostname() == ub.Hostname() {
		return true, nil
	}
	ipsA, err := net.LookupHost(ua.Hostname())
	if err != nil {
		return false, err
	}
	ipsB, err := net.LookupHost(ub.Hostname())
	if err != nil {
		return false, err
	}
	for _, x := range ipsA {
		if slices.Contains(ipsB, x) {
			return true, nil
		}
	}
	return false, nil
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return "443"
}

func stripSystemAdmin(host string) string {
	base, err := stripClustersPath(host)
	if err != nil {
		return host
	}
	return base
}
