// field.Error texts and reasons (see FieldError.h).
#include "validation/FieldError.h"

namespace apiserver {

std::string FieldError::body() const {
  switch (type) {
    case kRequired:
      return detail.empty() ? "Required value" : "Required value: " + detail;
    case kForbidden:
      return detail.empty() ? "Forbidden" : "Forbidden: " + detail;
    case kNotSupported:
      return "Unsupported value: " + value + (detail.empty() ? "" : ": " + detail);
    case kTooLong:
      return "Too long: " + detail;
    case kInvalid:
    default:
      return "Invalid value: " + value + (detail.empty() ? "" : ": " + detail);
  }
}

const char* FieldError::reason() const {
  switch (type) {
    case kRequired:
      return "FieldValueRequired";
    case kForbidden:
      return "FieldValueForbidden";
    case kNotSupported:
      return "FieldValueNotSupported";
    case kTooLong:
      return "FieldValueTooLong";
    case kInvalid:
    default:
      return "FieldValueInvalid";
  }
}

}  // namespace apiserver
