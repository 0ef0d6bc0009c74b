package gitrepo

import "testing"

func TestLocalPath(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"/srv/repo.git", "/srv/repo.git", true},
		{"../remote.git", "/home/u/remote.git", true},
		{"file:///srv/my%20repo.git", "/srv/my repo.git", true},
		{"file://localhost/srv/r.git", "/srv/r.git", true},
		{"file://otherhost/srv/r.git", "", false},
		{"https://example.test/r.git", "", false},
		{"git@example.test:org/r.git", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := LocalPath(c.in, "/home/u/work")
		if ok != c.ok || got != c.want {
			t.Errorf("LocalPath(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
