// meta.k8s.io Tables, what kubectl get asks for (Accept: ...;as=Table): the columns of each
// resource as the real server prints them (NAME HOLDER AGE for Leases; READY STATUS RESTARTS AGE
// IP NODE ... for Pods; LAST SEEN TYPE REASON OBJECT MESSAGE for Events), their cells, and the
// Table answer with its rows (PartialObjectMetadata or the object, per includeObject).
#pragma once

#include <string>
#include <vector>

#include "handlers/HandlerContext.h"
#include "http/HttpMessage.h"
#include "http/MediaTypes.h"
#include "json/Json.h"
#include "store/Collection.h"

namespace apiserver {

extern const char* const kNameDesc;  // the NAME column's description
extern const char* const kAgeDesc;   // the AGE column's description

J column(const char* name, const char* type, const char* format, const char* desc, int prio);
std::string age_of(const J& o);  // human duration since creationTimestamp, or <unknown>
J table_columns(const std::string& collection);
J table_cells(const std::string& collection, const J& o);

HttpResponse table_response(const HandlerContext& c, const Collection& col,
                            const std::vector<const J*>& items, const std::string& rv,
                            const AcceptInfo& acc, const std::string& cont = "");

}  // namespace apiserver
