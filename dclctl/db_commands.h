// dclctl's administration straight on the database (--database_url or DCL_DATABASE_URL):
// tokens, organizations and the datacenter module's switches. Admin work has no RPCs on
// purpose: whoever may change tokens and switches may reach the database.
#ifndef DCL_DCLCTL_DB_COMMANDS_H_
#define DCL_DCLCTL_DB_COMMANDS_H_

#include <string>

namespace dcl::admin {

// token create | token revoke | module enable | module disable | org create; returns the exit
// status. `noun` and `verb` are known to be one of those pairs.
int RunDatabaseCommand(const std::string& noun, const std::string& verb);

}  // namespace dcl::admin

#endif  // DCL_DCLCTL_DB_COMMANDS_H_
