package credentials

import "github.com/git-lfs/git-lfs/v3/creds"

// SetHelper makes h the credential helper chain git credential is asked through, for tests outside
// the package (git 2.39, the git of CI, drops the fields of git 2.46's credential protocol).
func SetHelper(r *Resolver, h creds.CredentialHelper) { r.helper = h }
