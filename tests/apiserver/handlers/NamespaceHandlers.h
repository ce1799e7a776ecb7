// core/v1 Namespaces, get and list only: every namespace exists (a list names the ones that
// hold objects, plus default), checked against RBAC (not the --deny rules), as JSON or a Table.
#pragma once

#include "auth/RbacPolicy.h"
#include "http/HttpMessage.h"
#include "http/RequestInfo.h"
#include "store/Store.h"

namespace apiserver {

HttpResponse namespace_get_or_list(const HttpRequest& req, const RequestInfo& info,
                                   const Store& store, const RbacPolicy& rbac);

}  // namespace apiserver
